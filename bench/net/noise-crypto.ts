/**
 * noise's ChaCha20-Poly1305, the two implementations @chainsafe/libp2p-noise
 * picks between (below 1,200 bytes its AssemblyScript one, from there
 * node:crypto): microseconds to seal and open one frame of each size.
 *
 * `node --import tsx bench/net/noise-crypto.ts`
 */
import { randomBytes } from 'node:crypto'
import { asCrypto, nodeCrypto } from '../../node_modules/@chainsafe/libp2p-noise/dist/src/crypto/index.js'

const ROUNDS = 40_000
const k = randomBytes(32)
const nonce = Buffer.alloc(12)
const ad = new Uint8Array(0)
for (const size of [12, 60, 200, 400, 700, 1100, 4000]) {
  const pt = randomBytes(size)
  const us: Record<string, number[]> = { as: [], node: [] }
  for (const [name, c] of [
    ['as', asCrypto],
    ['node', nodeCrypto],
    ['as', asCrypto],
    ['node', nodeCrypto]
  ] as const) {
    const ct = c.chaCha20Poly1305Encrypt(pt, nonce, ad, k) as Uint8Array
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < ROUNDS; i++) {
      c.chaCha20Poly1305Encrypt(pt, nonce, ad, k)
      const copy = Uint8Array.from(ct)
      c.chaCha20Poly1305Decrypt(copy, nonce, ad, k, copy.subarray(0, copy.length - 16))
    }
    us[name]?.push(Number(process.hrtime.bigint() - t0) / ROUNDS / 1000)
  }
  const best = (xs: number[] | undefined): number => Math.round(Math.min(...(xs ?? [])) * 100) / 100
  console.log(
    JSON.stringify({ bytes: size, sealAndOpenUs: { assemblyscript: best(us.as), nodeCrypto: best(us.node) } })
  )
}
