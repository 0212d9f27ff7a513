import { utf8ToBytes } from '@noble/hashes/utils.js'

const HEX_CODES = Array.from('0123456789abcdef', c => c.charCodeAt(0))
const hexScratch = new Uint8Array(64)
const ascii = new TextDecoder('latin1')

/**
 * Lowercase hex of bytes, as one flat string. (Built by `+=`, as
 * @noble/hashes' bytesToHex does on Node 20, the string is a rope of dozens
 * of pieces: slow to build, and slow the first time it is hashed as a Map
 * key, which every event id is, many times over, in the fold.)
 */
export function toHex(bytes: Uint8Array): string {
  const n = bytes.length * 2
  const out = n <= hexScratch.length ? hexScratch : new Uint8Array(n)
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number
    out[2 * i] = HEX_CODES[b >> 4] as number
    out[2 * i + 1] = HEX_CODES[b & 15] as number
  }
  return ascii.decode(n === out.length ? out : out.subarray(0, n))
}

/** Lowercase hex SHA-256 of bytes. */
export function sha256Hex(bytes: Uint8Array): string {
  sha256Into(bytes, bytes.length)
  return toHex(digest)
}

const encoder = new TextEncoder()
const CHUNK = 1 << 16
let chunk: Uint8Array | undefined

/** Lowercase hex SHA-256 of the UTF-8 encoding of a (long) string, encoded a chunk at a time. */
export function sha256HexOfText(text: string): string {
  const buf = (chunk ??= new Uint8Array(CHUNK + 64))
  H.set(IV)
  let done = 0
  let carry = 0
  let pos = 0
  while (pos < text.length) {
    const r = encoder.encodeInto(pos === 0 ? text : text.substring(pos), buf.subarray(carry, CHUNK))
    pos += r.read
    const len = carry + r.written
    const whole = len - (len % 64)
    for (let off = 0; off < whole; off += 64) compress(buf, off)
    done += whole
    carry = len - whole
    buf.copyWithin(0, whole, len)
  }
  finish(buf, carry, done)
  return toHex(digest)
}

/** Lowercase hex SHA-256 of the UTF-8 text of parts joined by NUL, so ("ab","c") and ("a","bc") differ. */
export function hashParts(...parts: readonly string[]): string {
  // Node and task ids hash a few ASCII ids: write them straight into the message buffer.
  let n = 0
  for (let p = 0; p < parts.length; p++) {
    const s = parts[p] as string
    if (p > 0) {
      if (n >= SMALL_MAX) return sha256Hex(utf8ToBytes(parts.join('\u0000')))
      msg[n++] = 0
    }
    if (n + s.length > SMALL_MAX) return sha256Hex(utf8ToBytes(parts.join('\u0000')))
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) return sha256Hex(utf8ToBytes(parts.join('\u0000')))
      msg[n++] = c
    }
  }
  sha256Into(msg, n)
  return toHex(digest)
}

// SHA-256 (FIPS 180-4) without per-call allocation. @noble/hashes costs
// several microseconds per call in set-up alone (the derivation hashes a few
// thousand node ids per tree, decoding one envelope per event), and this
// plain loop over an Int32Array schedule also runs faster on long inputs
// (the tree hash) on Node 20.

/** hashParts writes messages up to this many bytes straight into `msg`. */
const SMALL_MAX = 1024
const msg = new Uint8Array(SMALL_MAX)
const tail = new Uint8Array(SMALL_MAX + 64)
const pad = new Uint8Array(128)
const mid = new Int32Array(8)
const K = Int32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
])
const IV = Int32Array.from([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
])
const W = new Int32Array(64)
const H = new Int32Array(8)
const digest = new Uint8Array(32)

/**
 * Many hashParts(...prefix, last), one per `last`: the blocks of the common
 * prefix are compressed once. (A node's children ids share the parent and
 * proposal ids, two of their three blocks.)
 */
export function hashPartsEach(prefix: readonly string[], lasts: readonly string[]): string[] {
  // The prefix and its trailing separator, in `msg`.
  let n = 0
  if (prefix.length === 0) return lasts.map(x => hashParts(x))
  for (const s of prefix) {
    if (n + s.length + 1 > SMALL_MAX) return lasts.map(x => hashParts(...prefix, x))
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) return lasts.map(x => hashParts(...prefix, x))
      msg[n++] = c
    }
    msg[n++] = 0
  }
  const done = n - (n % 64)
  H.set(IV)
  for (let off = 0; off < done; off += 64) compress(msg, off)
  mid.set(H)
  const out: string[] = []
  for (const last of lasts) {
    let m = n - done
    let fits = m + last.length <= SMALL_MAX
    for (let i = 0; i < m; i++) tail[i] = msg[done + i] as number
    for (let i = 0; fits && i < last.length; i++) {
      const c = last.charCodeAt(i)
      if (c >= 0x80) fits = false
      tail[m++] = c
    }
    if (!fits) {
      // (Not through hashParts, which would overwrite the prefix in `msg`.)
      out.push(sha256Hex(utf8ToBytes([...prefix, last].join('\u0000'))))
      continue
    }
    H.set(mid)
    finish(tail, m, done)
    out.push(toHex(digest))
  }
  return out
}

/**
 * The first `keep` bytes of the SHA-256 of `data[0, len)`, as a new array:
 * for small inputs hashed very often (a sync range's fingerprint), without
 * the per-call allocations of a general hasher.
 */
export function sha256Prefix(data: Uint8Array, len: number, keep: number): Uint8Array {
  sha256Into(data, len)
  return digest.slice(0, keep)
}

/** SHA-256 of `data[0, len)` into `digest`. */
function sha256Into(data: Uint8Array, len: number): void {
  H.set(IV)
  finish(data, len, 0)
}

/**
 * Hash `data[0, len)` on from the state in `H`, which has taken `done`
 * bytes before it (a multiple of 64), into `digest`. Whole blocks are read
 * in place; the rest is padded in `pad`.
 */
function finish(data: Uint8Array, len: number, done: number): void {
  const whole = len - (len % 64)
  for (let off = 0; off < whole; off += 64) compress(data, off)
  // Padding: 0x80, zeros, then the bit length as a 64-bit big-endian integer.
  const rest = len - whole
  for (let i = 0; i < rest; i++) pad[i] = data[whole + i] as number
  const total = rest + 8 < 64 ? 64 : 128
  pad[rest] = 0x80
  pad.fill(0, rest + 1, total - 8)
  const hi = Math.floor((done + len) / 0x20000000)
  const lo = ((done + len) * 8) >>> 0
  pad[total - 8] = hi >>> 24
  pad[total - 7] = (hi >>> 16) & 255
  pad[total - 6] = (hi >>> 8) & 255
  pad[total - 5] = hi & 255
  pad[total - 4] = lo >>> 24
  pad[total - 3] = (lo >>> 16) & 255
  pad[total - 2] = (lo >>> 8) & 255
  pad[total - 1] = lo & 255
  for (let off = 0; off < total; off += 64) compress(pad, off)
  for (let i = 0; i < 8; i++) {
    const h = H[i] as number
    digest[4 * i] = h >>> 24
    digest[4 * i + 1] = (h >>> 16) & 255
    digest[4 * i + 2] = (h >>> 8) & 255
    digest[4 * i + 3] = h & 255
  }
}

function compress(msg: Uint8Array, off: number): void {
  for (let i = 0; i < 16; i++) {
    const j = off + 4 * i
    W[i] =
      ((msg[j] as number) << 24) |
      ((msg[j + 1] as number) << 16) |
      ((msg[j + 2] as number) << 8) |
      (msg[j + 3] as number)
  }
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15] as number
    const w2 = W[i - 2] as number
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)
    W[i] = ((W[i - 16] as number) + s0 + (W[i - 7] as number) + s1) | 0
  }
  let a = H[0] as number
  let b = H[1] as number
  let c = H[2] as number
  let d = H[3] as number
  let e = H[4] as number
  let f = H[5] as number
  let g = H[6] as number
  let h = H[7] as number
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + (K[i] as number) + (W[i] as number)) | 0
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0
    h = g
    g = f
    f = e
    e = (d + t1) | 0
    d = c
    c = b
    b = a
    a = (t1 + t2) | 0
  }
  H[0] = ((H[0] as number) + a) | 0
  H[1] = ((H[1] as number) + b) | 0
  H[2] = ((H[2] as number) + c) | 0
  H[3] = ((H[3] as number) + d) | 0
  H[4] = ((H[4] as number) + e) | 0
  H[5] = ((H[5] as number) + f) | 0
  H[6] = ((H[6] as number) + g) | 0
  H[7] = ((H[7] as number) + h) | 0
}
