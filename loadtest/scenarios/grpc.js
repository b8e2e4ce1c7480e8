// gRPC: GetBits and StreamBits through server reflection (no proto file needed).
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
  const res = client.invoke('drbgd.v1.Randomness/GetBits', { n: 256, alg: 'aes256ctr' });
  check(res, {
    'GetBits OK': (r) => r && r.status === grpc.StatusOK,
    'GetBits n and alg': (r) => r && r.message.n === '256' && r.message.alg === 'aes256ctr',
    'GetBits 32 bytes': (r) => r && r.message.data && (r.message.data.length === 44 || r.message.data.length === 32),
  });
  const bad = client.invoke('drbgd.v1.Randomness/GetBits', { n: 0 });
  check(bad, { 'n=0 is INVALID_ARGUMENT': (r) => r && r.status === grpc.StatusInvalidArgument });

  const n = 1_000_003;
  let bits = 0;
  let chunks = 0;
  await new Promise((resolve, reject) => {
    const stream = new grpc.Stream(client, 'drbgd.v1.Randomness/StreamBits');
    stream.on('data', (chunk) => { bits += Number(chunk.nBits); chunks += 1; });
    stream.on('error', (e) => reject(e));
    stream.on('end', () => resolve());
    stream.write({ n, alg: 'blake3', chunkBytes: 65536 });
    stream.end();
  });
  streamedBits.add(bits);
  check(null, { 'StreamBits delivered exactly n bits': () => bits === n && chunks > 1 });
  sleep(0.5);
}
