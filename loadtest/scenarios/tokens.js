// tokens: constant arrival rate of 256-bit tokens and UUIDs (the internal REST use), with
// /livez on the admin port as the baseline twice: at RATE/10 during the token phase (the same
// machine load, so the p99s compare the request paths), then alone at RATE afterwards.
import http from 'k6/http';
import { check } from 'k6';
import { baseThresholds, getToken, getUuids } from '../lib/common.js';

const RATE = Number(__ENV.RATE || 2000);
const DURATION = __ENV.DURATION || '30s';
const ADMIN_URL = __ENV.ADMIN_URL || 'http://127.0.0.1:8081';

export const options = {
  scenarios: {
    tokens: { executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: DURATION, preAllocatedVUs: 50, maxVUs: 200, exec: 'tokens' },
    uuids: { executor: 'constant-arrival-rate', rate: Math.round(RATE / 4), timeUnit: '1s', duration: DURATION, preAllocatedVUs: 20, maxVUs: 100, exec: 'uuids' },
    livez_during: { executor: 'constant-arrival-rate', rate: Math.max(1, Math.round(RATE / 10)), timeUnit: '1s', duration: DURATION, preAllocatedVUs: 10, maxVUs: 50, exec: 'livezDuring' },
    livez: { executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: DURATION, preAllocatedVUs: 50, maxVUs: 200, exec: 'livez', startTime: DURATION },
  },
  thresholds: {
    ...baseThresholds,
    'http_req_duration{endpoint:token}': ['p(95)<20', 'p(99)<50'],
    'http_req_duration{endpoint:uuid}': ['p(95)<20', 'p(99)<50'],
    'http_req_duration{endpoint:livez}': ['p(99)<50'],
    'http_req_duration{endpoint:livez_during}': ['p(99)<50'],
    // The client (k6) must keep up, or the figures measure k6 rather than drbgd.
    dropped_iterations: ['count<100'],
  },
};

export function tokens() { getToken(); }
export function uuids() { getUuids(1, 4); }
function probeLivez(endpoint) {
  const res = http.get(`${ADMIN_URL}/livez`, { tags: { endpoint } });
  check(res, { 'livez 200': (r) => r.status === 200 }, { endpoint });
}
export function livez() { probeLivez('livez'); }
export function livezDuring() { probeLivez('livez_during'); }
