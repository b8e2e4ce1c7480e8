// quotas: two named callers at the same time (config/examples/callers.toml; run.sh starts drbgd
// with it). `web` (quota 50 requests/s, burst 10) is offered twice its quota on /token and must be
// held at its rate with well-formed 429s; `batch` (no quota) at the same time must not notice.
//
// Both scenarios start at 0 and last DURATION, and setup() and teardown() are two requests each,
// so the test run's duration (the denominator k6 uses for a Counter's `rate`, setup and teardown
// included) is the scenarios' duration within milliseconds: `drbgd_quota_accepted{caller:web}` rate is the web caller's accepted
// requests per second. The burst adds burst/DURATION to it (0.33/s over 30 s).
//
// Env: WEB_RATE, BATCH_RATE (requests/s, default 100 each), DURATION (30s), WEB_KEY, BATCH_KEY
// (the example keys), QUOTA_RPS, QUOTA_BURST (what the web caller's quota must be: 50, 10).
// CHECK_USAGE=false skips setup()'s /usage check, to show the thresholds failing against a
// server without the quota.
import http from 'k6/http';
import { check, fail } from 'k6';
import { Counter, Gauge, Rate } from 'k6/metrics';
import { BASE_URL, baseThresholds, durationSeconds, recordTiming } from '../lib/common.js';

const WEB_RATE = Number(__ENV.WEB_RATE || 100);
const BATCH_RATE = Number(__ENV.BATCH_RATE || 100);
const DURATION = __ENV.DURATION || '30s';
const DURATION_S = durationSeconds(DURATION);
const QUOTA_RPS = Number(__ENV.QUOTA_RPS || 50);
const QUOTA_BURST = Number(__ENV.QUOTA_BURST || 10);
const CHECK_USAGE = __ENV.CHECK_USAGE !== 'false';
const KEYS = {
  web: __ENV.WEB_KEY || 'web-example-key',
  batch: __ENV.BATCH_KEY || 'batch-example-key',
};

if (WEB_RATE < 1.5 * QUOTA_RPS) {
  throw new Error(`WEB_RATE=${WEB_RATE} must be well above the quota (${QUOTA_RPS}/s) to exercise it`);
}

// Per caller (tag caller=web|batch): responses accepted (200) and refused for the rate (429), the
// share of 429s, and the server's own count of rate_limited denials during the run (from /usage).
const accepted = new Counter('drbgd_quota_accepted');
const limited = new Counter('drbgd_quota_rate_limited');
const limitedShare = new Rate('drbgd_quota_rate_limited_share');
const serverLimited = new Gauge('drbgd_quota_server_rate_limited');
const limitedWithRemaining = new Counter('drbgd_quota_429_with_r_above_0');

const round1 = (x) => Math.round(x * 10) / 10;

const scenario = (caller, rate) => ({
  executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration: DURATION,
  preAllocatedVUs: 10, maxVUs: 100, exec: caller, tags: { caller },
});

export const options = {
  scenarios: { web: scenario('web', WEB_RATE), batch: scenario('batch', BATCH_RATE) },
  thresholds: {
    // checks > 99.9 %, http_req_failed < 1 % (web's 429s are expected statuses, not failures).
    ...baseThresholds,
    'checks{caller:web}': ['rate>0.999'],
    'checks{caller:batch}': ['rate>0.999'],
    // The limited caller is held at its rate: accepted/s within ±10 % of the quota...
    'drbgd_quota_accepted{caller:web}': [`rate>${round1(0.9 * QUOTA_RPS)}`, `rate<${round1(1.1 * QUOTA_RPS)}`],
    // ...and the excess is refused, not queued (offered at 2x: about half is refused).
    'drbgd_quota_rate_limited{caller:web}': ['count>0'],
    'drbgd_quota_rate_limited_share{caller:web}': ['rate>0.4'],
    // The other caller is not affected: served at its offered rate, never refused, no failures,
    // latency as for `tokens`.
    'drbgd_quota_accepted{caller:batch}': [`rate>${round1(0.95 * BATCH_RATE)}`],
    'drbgd_quota_rate_limited{caller:batch}': ['count==0'],
    'http_req_failed{caller:batch}': ['rate<0.01'],
    'http_req_duration{caller:batch}': ['p(95)<20', 'p(99)<50'],
    'http_req_duration{caller:web}': ['p(95)<20', 'p(99)<50'],
    // k6 must keep the arrival rates, or web is not offered twice its quota.
    dropped_iterations: ['count<100'],
    // The server's own count (GET /usage before and after): none for batch; shown for web.
    'drbgd_quota_server_rate_limited{caller:batch}': ['value==0'],
    'drbgd_quota_server_rate_limited{caller:web}': ['value>0'],
  },
};

function auth(caller) {
  return { Authorization: `Bearer ${KEYS[caller]}` };
}

// k6 canonicalises header names the Go way (Ratelimit-Policy); look them up case-insensitively.
function header(res, name) {
  const want = name.toLowerCase();
  for (const k of Object.keys(res.headers)) if (k.toLowerCase() === want) return res.headers[k];
  return undefined;
}

// draft-ietf-httpapi-ratelimit-headers-09: RateLimit: "requests";r=7;t=1
function rateLimit(res) {
  const m = /^"requests";r=(\d+);t=(\d+)$/.exec(header(res, 'RateLimit') || '');
  return m ? { r: Number(m[1]), t: Number(m[2]) } : null;
}

const POLICY = `"requests";q=${QUOTA_RPS};w=1;qu="requests";drbgd-burst=${QUOTA_BURST}`;

function usage(caller) {
  const res = http.get(`${BASE_URL}/usage`, { headers: auth(caller), tags: { endpoint: 'usage', caller } });
  if (res.status !== 200) fail(`GET /usage as ${caller}: ${res.status} ${res.body}`);
  return res.json();
}

export function setup() {
  const web = usage('web');
  const batch = usage('batch');
  if (CHECK_USAGE) {
    const q = web.quota && web.quota.requests;
    if (web.caller !== 'web') fail(`/usage with the web key names caller ${JSON.stringify(web.caller)}, not "web"`);
    if (!q || q.per_second !== QUOTA_RPS || q.burst !== QUOTA_BURST) {
      fail(`caller web's requests quota is ${JSON.stringify(q)}, not ${QUOTA_RPS}/s burst ${QUOTA_BURST}: ` +
        'start drbgd with --config config/examples/callers.toml (loadtest/run.sh quotas does)');
    }
    if (batch.caller !== 'batch' || (batch.quota && batch.quota.requests)) {
      fail(`/usage with the batch key: caller ${JSON.stringify(batch.caller)}, requests quota ${JSON.stringify(batch.quota && batch.quota.requests)} (want "batch", none)`);
    }
  }
  return { webLimitedBefore: web.counters.denied.rate_limited, batchLimitedBefore: batch.counters.denied.rate_limited };
}

function getToken(caller) {
  const res = http.get(`${BASE_URL}/token?bytes=32`, {
    headers: auth(caller),
    tags: { endpoint: 'token', caller },
    // A 429 is the expected answer over quota, not a failure; anything else besides 200 is.
    responseCallback: http.expectedStatuses(200, 429),
  });
  recordTiming(res);
  if (res.status === 200) accepted.add(1, { caller });
  if (res.status === 429) limited.add(1, { caller });
  limitedShare.add(res.status === 429, { caller });
  return res;
}

const tokenChecks = {
  'token is 43 base64url chars': (r) => /^[A-Za-z0-9_-]{43}$/.test(r.body),
  'Cache-Control: no-store': (r) => r.headers['Cache-Control'] === 'no-store',
};

export function web() {
  const res = getToken('web');
  const rl = rateLimit(res);
  if (res.status === 429) {
    let body = null;
    try { body = res.json(); } catch (e) { /* checked below */ }
    const retryAfter = header(res, 'Retry-After');
    check(res, {
      'web 429: problem+json, code rate_limited': (r) => /^application\/problem\+json/.test(header(r, 'Content-Type') || '') && body !== null && body.code === 'rate_limited',
      'web 429: Retry-After whole seconds >= 1': () => /^\d+$/.test(retryAfter || '') && Number(retryAfter) >= 1,
      'web 429: RateLimit present, r = 0, t >= 1': () => rl !== null && rl.r === 0 && rl.t >= 1,
      'web 429: RateLimit-Policy is the quota': (r) => header(r, 'RateLimit-Policy') === POLICY,
      'web 429: Cache-Control: no-store': (r) => r.headers['Cache-Control'] === 'no-store',
    }, { caller: 'web' });
    // The field shows the bucket as it was when drbgd refused (it once read it later, and a
    // token arriving in between showed as r=1 on 0-3 % of 429s). Counted as well as checked.
    if (rl !== null) limitedWithRemaining.add(rl.r > 0 ? 1 : 0, { caller: 'web' });
  } else {
    check(res, {
      'web: status 200 (when not 429)': (r) => r.status === 200,
      ...tokenChecks,
      'web 200: RateLimit present, r <= burst': () => rl !== null && rl.r <= QUOTA_BURST,
      'web 200: RateLimit-Policy is the quota': (r) => header(r, 'RateLimit-Policy') === POLICY,
    }, { caller: 'web' });
  }
}

export function batch() {
  const res = getToken('batch');
  check(res, {
    'batch: status 200': (r) => r.status === 200,
    ...tokenChecks,
    'batch: no RateLimit / RateLimit-Policy headers': (r) => header(r, 'RateLimit') === undefined && header(r, 'RateLimit-Policy') === undefined,
  }, { caller: 'batch' });
}

// The server's count of the web caller's rate_limited denials during the run, next to k6's
// drbgd_quota_rate_limited{caller:web} in the summary (equal unless another client shares the
// caller on this instance).
export function teardown(data) {
  const web = usage('web');
  const batch = usage('batch');
  serverLimited.add(web.counters.denied.rate_limited - data.webLimitedBefore, { caller: 'web' });
  serverLimited.add(batch.counters.denied.rate_limited - data.batchLimitedBefore, { caller: 'batch' });
  console.log(`quotas: the server's rate_limited denials during the ${DURATION_S} s run: ` +
    `web ${web.counters.denied.rate_limited - data.webLimitedBefore}, ` +
    `batch ${batch.counters.denied.rate_limited - data.batchLimitedBefore}`);
}
