// smoke: a few VUs for seconds; every endpoint and format once, with content checks.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { ALGS, BASE_URL, baseThresholds, getBits, getInts, getNonce, getSequence, getToken, getUuids } from '../lib/common.js';

export const options = {
  // Seconds long on purpose: the web dashboard report needs at least one 1 s period.
  scenarios: { smoke: { executor: 'per-vu-iterations', vus: 2, iterations: 3, maxDuration: '1m' } },
  thresholds: {
    ...baseThresholds,
    checks: ['rate==1'],
    'http_req_duration{endpoint:token}': ['p(95)<100'],
    'http_req_duration{endpoint:bits}': ['p(95)<500'],
  },
};

export default function () {
  for (const alg of ALGS) {
    for (const format of ['hex', 'bits', 'binary']) getBits(1001, alg, format);
  }
  getBits(1_000_000, 'aes256ctr', 'binary', { size: 'streamed' });
  getToken();
  getNonce(24);
  getUuids(10, 4);
  getUuids(3, 7);
  getInts(0, 99, 100);
  getSequence(1, 52, 52);
  getSequence(1, 1_000_000, 6);
  for (const format of ['base64', 'base64url', 'json']) {
    const res = http.get(`${BASE_URL}/bits?n=256&format=${format}`, { tags: { endpoint: 'bits' } });
    check(res, { [`${format} 200`]: (r) => r.status === 200 && r.headers['Cache-Control'] === 'no-store' }, { endpoint: 'bits' });
  }
  const bad = http.get(`${BASE_URL}/bits?n=0`, { tags: { endpoint: 'error' }, responseCallback: http.expectedStatuses(400) });
  check(bad, {
    'invalid_n is a problem+json 400': (r) => r.status === 400 && r.json('code') === 'invalid_n',
    'errors are no-store too': (r) => r.headers['Cache-Control'] === 'no-store',
  }, { endpoint: 'error' });
  sleep(1);
}
