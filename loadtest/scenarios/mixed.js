// mixed: a realistic mix: mostly tokens and nonces, some UUIDs and integers, a little bulk.
import { ALGS, baseThresholds, getBits, getInts, getNonce, getSequence, getToken, getUuids, pick } from '../lib/common.js';

export const options = {
  scenarios: {
    mixed: { executor: 'constant-arrival-rate', rate: Number(__ENV.RATE || 500), timeUnit: '1s', duration: __ENV.DURATION || '2m', preAllocatedVUs: 30, maxVUs: 200 },
  },
  thresholds: {
    ...baseThresholds,
    'http_req_duration{endpoint:token}': ['p(99)<50'],
    'http_req_duration{endpoint:nonce}': ['p(99)<50'],
    'http_req_duration{endpoint:bits}': ['p(99)<1000'],
  },
};

export default function () {
  const r = Math.random();
  if (r < 0.45) getToken();
  else if (r < 0.7) getNonce(12);
  else if (r < 0.85) getUuids(5, 4);
  else if (r < 0.92) getInts(1, 100, 10);
  else if (r < 0.95) getSequence(1, 52, 52);
  else getBits(pick([10_000, 100_000, 1_000_000]), pick(ALGS), 'binary');
}
