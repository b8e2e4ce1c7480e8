// spike: a sudden 20x burst of tokens; errors must stay bounded and recovery be quick.
import { getToken } from '../lib/common.js';

const BASE = Number(__ENV.RATE || 500);

export const options = {
  scenarios: {
    spike: {
      executor: 'ramping-arrival-rate', startRate: BASE, timeUnit: '1s', preAllocatedVUs: 100, maxVUs: 2000,
      stages: [
        { target: BASE, duration: '20s' }, { target: BASE * 20, duration: '5s' },
        { target: BASE * 20, duration: '20s' }, { target: BASE, duration: '5s' }, { target: BASE, duration: '20s' },
      ],
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.05'],
    'http_req_duration{endpoint:token}': ['p(99)<200'],
  },
};

export default function () { getToken(); }
