// gRPC: GetBits, GetToken, GetNonce and StreamBits of drbgd.v1.RandomnessService through server
// reflection (no proto file needed).
import grpc from 'k6/net/grpc';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';
import { GRPC_ADDR } from '../lib/common.js';

const client = new grpc.Client();
const streamedBits = new Counter('drbgd_grpc_streamed_bits');

export const options = {
  vus: Number(__ENV.VUS || 2),
  iterations: Number(__ENV.ITERATIONS || 10),
  thresholds: {
    checks: ['rate==1'],
    grpc_req_duration: ['p(95)<200'],
  },
};

export default async function () {
  if (__ITER === 0) client.connect(GRPC_ADDR, { plaintext: true, reflect: true });
  const res = client.invoke('drbgd.v1.RandomnessService/GetBits', { n: 256, alg: 'ALGORITHM_AES256CTR' });
  check(res, {
    'GetBits OK': (r) => r && r.status === grpc.StatusOK,
    'GetBits n and alg': (r) => r && r.message.n === '256' && r.message.alg === 'ALGORITHM_AES256CTR',
    'GetBits 32 bytes': (r) => r && r.message.data && (r.message.data.length === 44 || r.message.data.length === 32),
  });
  const token = client.invoke('drbgd.v1.RandomnessService/GetToken', {});
  check(token, {
    'GetToken: 32 bytes base64url': (r) => r && r.status === grpc.StatusOK && r.message.token.length === 43
      && r.message.format === 'FORMAT_BASE64URL',
  });
  const nonce = client.invoke('drbgd.v1.RandomnessService/GetNonce', {});
  check(nonce, { 'GetNonce: 12 bytes hex': (r) => r && r.status === grpc.StatusOK && r.message.nonce.length === 24 });
  const bad = client.invoke('drbgd.v1.RandomnessService/GetBits', { n: 0 });
  check(bad, { 'n=0 is INVALID_ARGUMENT': (r) => r && r.status === grpc.StatusInvalidArgument });

  const n = 1_000_003;
  let bits = 0;
  let chunks = 0;
  await new Promise((resolve, reject) => {
    const stream = new grpc.Stream(client, 'drbgd.v1.RandomnessService/StreamBits');
    stream.on('data', (chunk) => { bits += Number(chunk.nBits); chunks += 1; });
    stream.on('error', (e) => reject(e));
    stream.on('end', () => resolve());
    stream.write({ n, alg: 'ALGORITHM_BLAKE3', chunkBytes: 65536 });
    stream.end();
  });
  streamedBits.add(bits);
  check(null, { 'StreamBits delivered exactly n bits': () => bits === n && chunks > 1 });
  sleep(0.5);
}
