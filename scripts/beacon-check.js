#!/usr/bin/env node
// drand's npm clients against drbgd's beacon, with no drbgd code:
// - drand-client 1.4.2 (HttpCachingChain + HttpChainClient, beacon verification on, the chain
//   hash and public key pinned) fetches and verifies the current round and the one before, and
//   /public/latest agrees with them; the same client pinned to another chain, or told another
//   public key, refuses;
// - tlock-js 0.9.0 encrypts a message to the round two periods ahead, fails to decrypt it before
//   that round (and the server does not give the round out: 425), and decrypts it after.
//
// usage: node scripts/beacon-check.js BASE_URL CHAIN_HASH PUBLIC_KEY
//   BASE_URL: the beacon's root, e.g. http://127.0.0.1:8080/beacon (the chain is fetched under
//   BASE_URL/CHAIN_HASH, as drand's clients address quicknet).
// The modules come from scripts/beacon-clients/node_modules (scripts/beacon-check.sh sets
// NODE_PATH).
'use strict'

const assert = require('node:assert/strict')
const drand = require('drand-client')
const tlock = require('tlock-js')

// quicknet's public key: a real key that is not this chain's.
const OTHER_PUBLIC_KEY =
  '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))

// Waits, if the next round is less than `marginMs` away, until it is out: the checks that follow
// then have at least that long before the clock moves on.
async function clearOfBoundary(info, marginMs) {
  const next = drand.roundTime(info, drand.roundAt(Date.now(), info) + 1)
  if (next - Date.now() < marginMs) await sleep(next - Date.now() + 50)
}

async function checkDrandClient(base, chainHash, publicKey) {
  const options = {
    ...drand.defaultChainOptions,
    disableBeaconVerification: false,
    noCache: true, // adds ?<ms> to each URL: the server must ignore it
    chainVerificationParams: {chainHash, publicKey},
  }
  const chain = new drand.HttpCachingChain(`${base}/${chainHash}`, options)
  const client = new drand.HttpChainClient(chain, options)
  const info = await chain.info()
  assert.equal(info.hash, chainHash)
  assert.equal(info.public_key, publicKey)
  assert.equal(info.schemeID, 'bls-unchained-g1-rfc9380')
  await clearOfBoundary(info, 1000)
  const current = drand.roundAt(Date.now(), info)
  const beacon = await drand.fetchBeacon(client, current)
  const before = await drand.fetchBeacon(client, current - 1)
  assert.equal(beacon.round, current)
  assert.equal(before.round, current - 1)
  assert.equal(Object.keys(beacon).sort().join(','), 'randomness,round,signature')
  const latest = await client.latest()
  assert.deepEqual(latest, beacon, '/public/latest is the current round, verified above')
  // The unprefixed paths serve the same chain.
  const plain = new drand.HttpChainClient(new drand.HttpCachingChain(base, options), options)
  assert.deepEqual(await drand.fetchBeacon(plain, current - 1), before)
  console.log(`drand-client 1.4.2: rounds ${current - 1} and ${current} verified; /public/latest agrees`)

  // Negative controls: another chain's pins, and a round checked against another key.
  const pinnedElsewhere = new drand.HttpCachingChain(base, {
    ...options,
    chainVerificationParams: {chainHash: 'ff'.repeat(32), publicKey},
  })
  await assert.rejects(pinnedElsewhere.info(), /did not match the verification params/)
  const otherKey = {baseUrl: `${base}/${chainHash}`, info: async () => ({...info, public_key: OTHER_PUBLIC_KEY})}
  await assert.rejects(drand.fetchBeacon(new drand.HttpChainClient(otherKey, options), current - 1), /not valid/)
  console.log('drand-client 1.4.2: other pins and another public key refused')
  return {info, beacons: [before, beacon]}
}

async function checkTlock(base, chainHash, publicKey, info) {
  const options = {...drand.defaultChainOptions, chainVerificationParams: {chainHash, publicKey}}
  const client = new tlock.HttpChainClient(new tlock.HttpCachingChain(`${base}/${chainHash}`, options), options)
  await clearOfBoundary(info, 1000)
  const target = drand.roundAt(Date.now(), info) + 2
  const message = `drbgd beacon check: readable from round ${target}`
  const ciphertext = await tlock.timelockEncrypt(target, tlock.Buffer.from(message), client)
  await assert.rejects(tlock.timelockDecrypt(ciphertext, client), /too early/i)
  // Nor does the server give the round's signature (the decryption key) out yet.
  await assert.rejects(client.get(target), /425/)
  console.log(`tlock-js 0.9.0: encrypted to round ${target}; not decryptable before it, the round refused (425)`)
  await sleep(drand.roundTime(info, target) - Date.now() + 200)
  const plain = await tlock.timelockDecrypt(ciphertext, client)
  assert.equal(plain.toString(), message)
  console.log(`tlock-js 0.9.0: decrypted once round ${target} was out`)
}

async function main() {
  const [base, chainHash, publicKey] = process.argv.slice(2)
  if (!base || !chainHash || !publicKey) {
    console.error('usage: node scripts/beacon-check.js BASE_URL CHAIN_HASH PUBLIC_KEY')
    process.exit(2)
  }
  const {info, beacons} = await checkDrandClient(base, chainHash, publicKey)
  await checkTlock(base, chainHash, publicKey, info)
  // For drand-verify (scripts/beacon-check.py): the rounds drand-client verified.
  console.log(`verified-rounds ${JSON.stringify(beacons)}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
