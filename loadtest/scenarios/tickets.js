// tickets: ticketed draws against plain receipts, 32 clients each, one after the other: POST /int
// with receipt=true, then POST /int under a fresh ticket each (created in setup). Needs a server
// with [tickets] (receipts and auth on) and API_KEY, a key of a caller allowed /int and /tickets.
// scripts/ticket-bench.sh starts one and runs this.
import http from 'k6/http';
import { check } from 'k6';

const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${__ENV.API_KEY}` };
const VUS = 32;
const SECONDS = Number(__ENV.SECONDS || 10);
// Tickets made before the run: enough for the ticketed scenario at a few thousand draws/s.
const TICKETS = Number(__ENV.TICKETS || 60000);

export const options = {
  scenarios: {
    plain: { executor: 'constant-vus', vus: VUS, duration: `${SECONDS}s`, tags: { kind: 'plain' }, exec: 'plain' },
    ticketed: {
      executor: 'constant-vus', vus: VUS, duration: `${SECONDS}s`, startTime: `${SECONDS + 1}s`,
      tags: { kind: 'ticketed' }, exec: 'ticketed',
    },
  },
  setupTimeout: '120s',
  summaryTrendStats: ['p(50)', 'p(99)', 'max'],
  thresholds: {
    checks: ['rate==1'],
    'http_reqs{kind:plain}': ['count>0'],
    'http_reqs{kind:ticketed}': ['count>0'],
    'http_req_duration{kind:plain}': ['p(99)<10000'],
    'http_req_duration{kind:ticketed}': ['p(99)<10000'],
  },
};

export function setup() {
  const ids = [];
  while (ids.length < TICKETS) {
    const res = http.post(`${BASE_URL}/tickets`, JSON.stringify({ n: 50 }), { headers: HEADERS });
    if (res.status !== 201) throw new Error(`POST /tickets: ${res.status} ${res.body}`);
    for (const t of res.json('tickets')) ids.push(t.ticket_id);
  }
  return { ids };
}

const body = { min: 1, max: 1000000, count: 5 };

export function plain() {
  const res = http.post(`${BASE_URL}/int`, JSON.stringify({ ...body, receipt: true }), { headers: HEADERS });
  check(res, { 'plain receipt 200': (r) => r.status === 200 });
}

export function ticketed(data) {
  // Each VU walks its own stride of the tickets: every draw uses a fresh one.
  const id = data.ids[(__VU - 1) + VUS * __ITER];
  if (!id) return;
  const res = http.post(`${BASE_URL}/int`, JSON.stringify({ ...body, ticket: id }), { headers: HEADERS });
  check(res, { 'ticketed 200': (r) => r.status === 200 });
}
