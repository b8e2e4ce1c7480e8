// soak: long and steady (default 30 minutes) to watch memory and latency drift: the drbgd
// dashboard's process row shows process_resident_memory_bytes, CPU and open fds per instance.
import { baseThresholds, getBits, getToken, getUuids, pick, ALGS } from '../lib/common.js';

export const options = {
  scenarios: {
    soak: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE || 300), timeUnit: '1s', duration: __ENV.DURATION || '30m', preAllocatedVUs: 20, maxVUs: 100 },
  },
  thresholds: {
    ...baseThresholds,
    'http_req_duration{endpoint:token}': ['p(99)<50'],
    'http_req_duration{endpoint:bits}': ['p(99)<500'],
  },
};

export default function () {
  const r = Math.random();
  if (r < 0.6) getToken();
  else if (r < 0.9) getUuids(1, 7);
  else getBits(1_000_000, pick(ALGS), 'binary');
}
