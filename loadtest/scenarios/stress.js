// stress: ramping arrival rate of 256-bit requests to find the knee (watch p99 and errors).
import { baseThresholds, getBits, pick, ALGS } from '../lib/common.js';

const PEAK = Number(__ENV.PEAK || 40000);

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-arrival-rate', startRate: 500, timeUnit: '1s', preAllocatedVUs: 100, maxVUs: 1000,
      stages: [
        { target: PEAK / 4, duration: '30s' }, { target: PEAK / 2, duration: '30s' },
        { target: PEAK, duration: '30s' }, { target: PEAK, duration: '30s' }, { target: 0, duration: '10s' },
      ],
    },
  },
  thresholds: {
    // Shedding (503) is the designed answer past the knee; the run fails if it exceeds 5%.
    http_req_failed: ['rate<0.05'],
    'http_req_duration{endpoint:bits}': ['p(99)<250'],
  },
};

export default function () { getBits(256, pick(ALGS), 'hex'); }
