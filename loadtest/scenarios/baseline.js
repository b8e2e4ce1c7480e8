// baseline: the k6 client alone, fetching a static body of the same size as a 10^7-bit
// response (1.25 MB) from BASELINE_URL (e.g. nginx on loopback), with the same VUs as bulk:
// the ceiling the client itself imposes on this machine.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  vus: 2,
  duration: __ENV.DURATION || '10s',
  thresholds: { checks: ['rate==1'], 'http_req_duration{endpoint:static}': ['p(95)<2000'] },
};

export default function () {
  const res = http.get(__ENV.BASELINE_URL, { tags: { endpoint: 'static' }, responseType: 'binary' });
  check(res, { 'static 1.25 MB': (r) => r.status === 200 && r.body.byteLength === 1_250_000 });
}
