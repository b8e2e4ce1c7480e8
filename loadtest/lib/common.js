// Shared options, checks and metrics for every drbgd k6 scenario.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Trend } from 'k6/metrics';

export const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
export const GRPC_ADDR = __ENV.GRPC_ADDR || BASE_URL.replace(/^https?:\/\//, '');
// Every algorithm drbgd ships (all enabled by default); ALGS=chacha20,blake3 narrows a run.
export const ALL_ALGS = [
  'chacha20', 'aes256ctr', 'aes192ctr', 'aes128ctr', 'hash_sha256', 'hash_sha512', 'hmac_sha256', 'hmac_sha512',
  'blake3', 'randen',
];
export const ALGS = __ENV.ALGS ? __ENV.ALGS.split(',').map((a) => a.trim()).filter(Boolean) : ALL_ALGS;

// A k6-style duration ("500ms", "30s", "1m", "1h", "1m30s", "1.5h") in seconds. A bare number is
// seconds. Throws on anything else, so a typo stops the run instead of becoming NaN.
export function durationSeconds(text) {
  const s = String(text).trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
  let total = 0;
  let m;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * unit[m[2]];
    if (re.lastIndex === s.length) return total;
  }
  throw new Error(`invalid duration ${JSON.stringify(text)} (use e.g. 30s, 1m, 1h, 1m30s)`);
}

// Server-side timing from the Server-Timing header (generation vs encoding), and a second,
// client-side bias measurement: ones and bits actually received.
export const serverGen = new Trend('drbgd_server_generate_ms', true);
export const serverEnc = new Trend('drbgd_server_encode_ms', true);
export const onesSeen = new Counter('drbgd_client_ones');
export const bitsSeen = new Counter('drbgd_client_bits');

// Thresholds every scenario shares; scenarios add their own per endpoint tag.
export const baseThresholds = {
  checks: ['rate>0.999'],
  http_req_failed: ['rate<0.01'],
};

const POPCOUNT = new Uint8Array(256).map((_, i) => {
  let c = 0;
  for (let v = i; v; v >>= 1) c += v & 1;
  return c;
});

export function hexToBytes(hex) {
  if (!/^[0-9a-f]*$/.test(hex) || hex.length % 2) return null;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16);
  return out;
}

export function ones(bytes) {
  let c = 0;
  for (let i = 0; i < bytes.length; i++) c += POPCOUNT[bytes[i]];
  return c;
}

export function recordTiming(res) {
  const t = res.headers['Server-Timing'];
  if (!t) return;
  const gen = /gen;dur=([0-9.]+)/.exec(t);
  const enc = /enc;dur=([0-9.]+)/.exec(t);
  if (gen) serverGen.add(parseFloat(gen[1]));
  if (enc) serverEnc.add(parseFloat(enc[1]));
}

function commonChecks(res, alg) {
  return {
    'status 200': (r) => r.status === 200,
    'Cache-Control: no-store': (r) => r.headers['Cache-Control'] === 'no-store',
    'X-Drbg-Alg echoes the request': (r) => !alg || r.headers['X-Drbg-Alg'] === alg,
  };
}

// GET /bits?n=&alg=&format=hex|bits|binary with content checks: length, alphabet, masked tail.
export function getBits(n, alg, format = 'hex', extraTags = {}) {
  const binary = format === 'binary';
  const res = http.get(`${BASE_URL}/bits?n=${n}&alg=${alg}&format=${format}`, {
    tags: { endpoint: 'bits', alg, ...extraTags },
    responseType: binary ? 'binary' : 'text',
  });
  recordTiming(res);
  const byteLen = Math.ceil(n / 8);
  let bytes = null;
  const checks = commonChecks(res, alg);
  if (format === 'hex') {
    bytes = res.status === 200 ? hexToBytes(res.body) : null;
    checks['hex alphabet'] = () => bytes !== null;
  } else if (format === 'bits') {
    checks['0/1 alphabet, n characters'] = (r) => r.body.length === n && /^[01]*$/.test(r.body);
  } else {
    bytes = res.status === 200 ? new Uint8Array(res.body) : null;
  }
  if (bytes) {
    checks['decoded length = ceil(n/8)'] = () => bytes.length === byteLen;
    checks['unused tail bits are zero'] = () => n % 8 === 0 || (bytes[byteLen - 1] & ((1 << (8 - (n % 8))) - 1)) === 0;
    if (bytes.length <= 65536) {
      onesSeen.add(ones(bytes), { alg });
      bitsSeen.add(n, { alg });
    }
  }
  check(res, checks, { endpoint: 'bits' });
  return res;
}

export function getToken() {
  const res = http.get(`${BASE_URL}/token?bytes=32`, { tags: { endpoint: 'token' } });
  recordTiming(res);
  check(res, {
    ...commonChecks(res, null),
    'token is 43 base64url chars': (r) => /^[A-Za-z0-9_-]{43}$/.test(r.body),
  }, { endpoint: 'token' });
  return res;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-([47])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function getUuids(count = 1, version = 4) {
  const res = http.get(`${BASE_URL}/uuid?count=${count}&version=${version}`, { tags: { endpoint: 'uuid' } });
  const ids = res.status === 200 ? res.body.trim().split('\n') : [];
  check(res, {
    ...commonChecks(res, null),
    'count UUIDs': () => ids.length === count,
    'version and variant bits': () => ids.every((id) => { const m = UUID_RE.exec(id); return m && m[1] === String(version); }),
  }, { endpoint: 'uuid' });
  return res;
}

export function getInts(min, max, count) {
  const res = http.get(`${BASE_URL}/int?min=${min}&max=${max}&count=${count}`, { tags: { endpoint: 'int' } });
  const values = res.status === 200 ? res.body.trim().split('\n').map(Number) : [];
  check(res, {
    ...commonChecks(res, null),
    'count integers in [min, max]': () => values.length === count && values.every((v) => v >= min && v <= max),
  }, { endpoint: 'int' });
  return res;
}

export function getSequence(min, max, count) {
  const res = http.get(`${BASE_URL}/sequence?min=${min}&max=${max}&count=${count}`, { tags: { endpoint: 'sequence' } });
  const values = res.status === 200 ? res.body.trim().split('\n').map(Number) : [];
  check(res, {
    ...commonChecks(res, null),
    'count distinct integers in [min, max]': () =>
      values.length === count && new Set(values).size === count && values.every((v) => v >= min && v <= max),
  }, { endpoint: 'sequence' });
  return res;
}

export function getNonce(bytes = 12) {
  const res = http.get(`${BASE_URL}/nonce?bytes=${bytes}`, { tags: { endpoint: 'nonce' } });
  check(res, {
    ...commonChecks(res, null),
    'nonce hex of the right length': (r) => new RegExp(`^[0-9a-f]{${bytes * 2}}$`).test(r.body),
  }, { endpoint: 'nonce' });
  return res;
}

export function pick(list) {
  return list[Math.floor(Math.random() * list.length)];
}
