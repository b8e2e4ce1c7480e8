// bulk: /bits with n from 10^4 to 10^7 for all three algorithms; 10^7-bit responses stream.
import { ALGS, baseThresholds, getBits } from '../lib/common.js';

const SIZES = [10_000, 100_000, 1_000_000, 10_000_000];

export const options = {
  scenarios: Object.fromEntries(ALGS.map((alg, i) => [alg, {
    executor: 'constant-vus', vus: 2, duration: __ENV.DURATION || '20s', exec: 'bulk',
    env: { ALG: alg }, startTime: `${i * Number((__ENV.DURATION || '20s').replace('s', ''))}s`,
  }])),
  thresholds: {
    ...baseThresholds,
    'http_req_duration{endpoint:bits,size:1e7}': ['p(95)<2000'],
    // Per-algorithm sub-metrics, so the summary reports each one's 10^7-bit latency.
    ...Object.fromEntries(ALGS.map((alg) => [`http_req_duration{endpoint:bits,size:1e7,alg:${alg}}`, ['p(95)<2000']])),
    'http_req_duration{endpoint:bits,size:1e4}': ['p(95)<50'],
  },
};

export function bulk() {
  for (const n of SIZES) {
    getBits(n, __ENV.ALG, 'binary', { size: `1e${Math.log10(n)}` });
  }
}
