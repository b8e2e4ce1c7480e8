// bulk: /bits with n from 10^4 to 10^7 for every enabled algorithm, one after another (each for
// DURATION, default 20s); 10^7-bit responses stream. setup() reads /algorithms and stops the run
// if an enabled algorithm is not covered (or a covered one is not enabled).
import http from 'k6/http';
import { ALGS, BASE_URL, baseThresholds, durationSeconds, getBits } from '../lib/common.js';

const SIZES = [10_000, 100_000, 1_000_000, 10_000_000];
const DURATION = __ENV.DURATION || '20s';
const STEP_S = durationSeconds(DURATION);

export const options = {
  scenarios: Object.fromEntries(ALGS.map((alg, i) => [alg, {
    executor: 'constant-vus', vus: 2, duration: DURATION, exec: 'bulk',
    env: { ALG: alg }, startTime: `${i * STEP_S}s`,
  }])),
  thresholds: {
    ...baseThresholds,
    'http_req_duration{endpoint:bits,size:1e7}': ['p(95)<2000'],
    // Per-algorithm sub-metrics, so the summary reports each one's 10^7-bit latency.
    ...Object.fromEntries(ALGS.map((alg) => [`http_req_duration{endpoint:bits,size:1e7,alg:${alg}}`, ['p(95)<2000']])),
    'http_req_duration{endpoint:bits,size:1e4}': ['p(95)<50'],
  },
};

export function setup() {
  const res = http.get(`${BASE_URL}/algorithms`, { tags: { endpoint: 'algorithms' } });
  if (res.status !== 200) throw new Error(`GET /algorithms: ${res.status}`);
  const enabled = res.json('algorithms').filter((a) => a.enabled).map((a) => a.name);
  const missing = enabled.filter((a) => !ALGS.includes(a));
  const disabled = ALGS.filter((a) => !enabled.includes(a));
  if (__ENV.ALGS === undefined && missing.length) throw new Error(`bulk does not cover enabled algorithms: ${missing}`);
  if (disabled.length) throw new Error(`not enabled on ${BASE_URL}: ${disabled} (set ALGS to a subset of ${enabled})`);
  return { enabled };
}

export function bulk() {
  for (const n of SIZES) {
    getBits(n, __ENV.ALG, 'binary', { size: `1e${Math.log10(n)}` });
  }
}
