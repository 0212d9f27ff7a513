/**
 * Properties of the wire codec: signed valid events round-trip; no single
 * flipped byte yields an accepted event; no input makes decodeEvent throw; a
 * mutated envelope is either rejected or accepted only if it is valid.
 */
import { isDeepStrictEqual } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import * as dagCbor from '@ipld/dag-cbor'
import type { PrivateKey } from '@libp2p/interface'
import {
  WIRE_REJECT_REASONS,
  decodeEvent,
  encodeEnvelope,
  eventIdOf,
  signEventSync,
  signRawSync,
  splitWire,
  validateEnvelope
} from '../../src/wire/index.js'
import { NOT_HANDLED, decodeCanonicalSubset } from '../../src/wire/canonical-cbor.js'
import { arbSignable, TEST_SWARM, testKeys } from '../helpers/arbitraries.js'

const RUNS = 1000
const KINDS = ['event', 'other-version', 'rejected']

let keys: PrivateKey[] = []
beforeAll(async () => {
  keys = await testKeys(4)
})

describe('codec properties', () => {
  it('a signed valid event decodes to the same id and an equal envelope', () => {
    const seen = new Map<string, number>()
    fc.assert(
      fc.property(arbSignable(keys), ({ key, env }) => {
        const signed = signEventSync(env, key)
        const out = decodeEvent(signed.bytes, { swarm: TEST_SWARM })
        expect(out.kind).toBe('event')
        if (out.kind !== 'event') return
        expect(out.event.id).toBe(signed.event.id)
        expect(out.event.id).toBe(eventIdOf(encodeEnvelope(env)))
        // isDeepStrictEqual first: vitest's matcher is slow over 1000 runs; it only runs to explain a failure.
        if (!isDeepStrictEqual(out.event.env, env)) expect(out.event.env).toStrictEqual(env)
        expect(Buffer.compare(out.bytes, signed.bytes)).toBe(0)
        seen.set(env.type, (seen.get(env.type) ?? 0) + 1)
      }),
      { numRuns: RUNS }
    )
    // The generator must reach every event type, or the property proves less than it claims.
    expect(seen.size).toBe(13)
  })

  it('any single flipped byte of a valid event is rejected', () => {
    const arb = arbSignable(keys).chain(({ key, env }) => {
      const bytes = signEventSync(env, key).bytes
      return fc.tuple(fc.constant(bytes), fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }))
    })
    const reasons = new Map<string, number>()
    fc.assert(
      fc.property(arb, ([bytes, at, mask]) => {
        const flipped = bytes.slice()
        flipped[at] = (flipped[at] ?? 0) ^ mask
        const out = decodeEvent(flipped, { swarm: TEST_SWARM })
        expect(out.kind).toBe('rejected')
        if (out.kind === 'rejected') reasons.set(out.reason, (reasons.get(out.reason) ?? 0) + 1)
      }),
      { numRuns: RUNS }
    )
    expect(reasons.get('bad-signature') ?? 0).toBeGreaterThan(0)
  })

  it('arbitrary bytes never make decodeEvent throw', () => {
    const arb = fc.oneof(
      fc.uint8Array({ maxLength: 400 }),
      // CBOR-valid data followed by 64 bytes: reaches the checks past decoding
      fc.tuple(fc.jsonValue(), fc.uint8Array({ minLength: 64, maxLength: 64 })).map(([v, sig]) => {
        const head = dagCbor.encode(v)
        const out = new Uint8Array(head.length + sig.length)
        out.set(head)
        out.set(sig, head.length)
        return out
      })
    )
    fc.assert(
      fc.property(arb, fc.boolean(), (bytes, verify) => {
        const out = decodeEvent(bytes, { swarm: TEST_SWARM, verify })
        expect(KINDS).toContain(out.kind)
        if (out.kind === 'rejected') expect(WIRE_REJECT_REASONS).toContain(out.reason)
      }),
      { numRuns: RUNS }
    )
  })

  it('a mutated envelope, correctly signed, is accepted only when it is still valid', () => {
    // Replace one field somewhere in the envelope tree with an arbitrary value, sign the result, decode.
    const arb = arbSignable(keys).chain(({ key, env }) =>
      fc.tuple(
        fc.constant(key),
        fc.constant(env),
        fc.nat(),
        fc.oneof(
          fc.jsonValue({ maxDepth: 2 }),
          fc.constantFrom(null, -1, 0.5, 2 ** 53, '', 'x', 'accept', [], {}, true)
        )
      )
    )
    const kinds = new Map<string, number>()
    fc.assert(
      fc.property(arb, ([key, env, pick, replacement]) => {
        const mutated = structuredClone(env) as unknown as Record<string, unknown>
        const slots = collectSlots(mutated)
        const slot = slots[pick % slots.length]
        if (slot === undefined) return
        slot.set(replacement)
        let envelopeBytes: Uint8Array
        try {
          envelopeBytes = dagCbor.encode(mutated)
        } catch {
          return // not representable in DAG-CBOR (e.g. -0 in JSON): nothing to send
        }
        const wire = signRawSync(TEST_SWARM, envelopeBytes, key)
        const out = decodeEvent(wire, { swarm: TEST_SWARM })
        kinds.set(
          out.kind === 'rejected' ? out.reason : out.kind,
          (kinds.get(out.kind === 'rejected' ? out.reason : out.kind) ?? 0) + 1
        )
        if (out.kind === 'event') expect(validateEnvelope(out.event.env)).toBeNull()
        // Rejected for its content (not for being sent to another swarm): the one-call validator agrees.
        if (out.kind === 'rejected' && out.reason !== 'wrong-swarm') {
          expect(validateEnvelope(dagCbor.decode(envelopeBytes))).not.toBeNull()
        }
      }),
      { numRuns: RUNS }
    )
    expect(kinds.get('wrong-shape') ?? 0).toBeGreaterThan(0)
  })

  it('the fast canonical decoder only accepts what the reference decodes and re-encodes identically', () => {
    const canonicalish = fc.jsonValue({ maxDepth: 3 }).map(v => dagCbor.encode(v))
    const fromEvents = arbSignable(keys).map(({ key, env }) => signEventSync(env, key).bytes.subarray(0, -64))
    const mutate = (arb: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> =>
      arb.chain(b =>
        fc
          .tuple(
            fc.nat({ max: Math.max(0, b.length - 1) }),
            fc.integer({ min: 0, max: 255 }),
            fc.constantFrom('flip', 'insert', 'delete', 'cut')
          )
          .map(([at, x, how]) => {
            if (how === 'flip') {
              const c = b.slice()
              c[at] = x
              return c
            }
            if (how === 'insert') return new Uint8Array([...b.subarray(0, at), x, ...b.subarray(at)])
            if (how === 'delete') return new Uint8Array([...b.subarray(0, at), ...b.subarray(at + 1)])
            return b.slice(0, at)
          })
      )
    const loose = fc
      .tuple(fc.jsonValue({ maxDepth: 3 }), fc.array(fc.nat({ max: 7 }), { minLength: 1, maxLength: 50 }))
      .map(([v, choices]) => looseEncode(v, choices))
    const arb = fc.oneof(
      canonicalish,
      fromEvents,
      loose,
      mutate(canonicalish),
      mutate(fromEvents),
      fc.uint8Array({ maxLength: 64 })
    )
    let handled = 0
    fc.assert(
      fc.property(arb, bytes => {
        const fast = decodeCanonicalSubset(bytes)
        if (fast === NOT_HANDLED) return
        handled++
        expect(isDeepStrictEqual(fast, dagCbor.decode(bytes))).toBe(true)
        expect(Buffer.compare(dagCbor.encode(fast), bytes)).toBe(0)
      }),
      { numRuns: 3 * RUNS }
    )
    expect(handled).toBeGreaterThan(RUNS / 2)
  })

  it('the fast canonical decoder handles every valid event (so the reference path stays the exception)', () => {
    fc.assert(
      fc.property(arbSignable(keys), ({ key, env }) => {
        const bytes = signEventSync(env, key).bytes.subarray(0, -64)
        expect(decodeCanonicalSubset(bytes)).not.toBe(NOT_HANDLED)
      }),
      { numRuns: RUNS }
    )
  })

  it('splitWire cuts exactly the 64-byte signature off', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 65, maxLength: 200 }), bytes => {
        const parts = splitWire(bytes)
        expect(parts?.signature.length).toBe(64)
        expect(parts?.envelopeBytes.length).toBe(bytes.length - 64)
      }),
      { numRuns: 100 }
    )
  })
})

/**
 * CBOR for a JSON value with encoding choices drawn from `choices` (cycled):
 * integer and length heads sometimes wider than needed, map keys sometimes
 * unsorted, strings sometimes led by a byte-order mark. Produces canonical and
 * subtly non-canonical encodings of the same values.
 */
function looseEncode(value: unknown, choices: readonly number[]): Uint8Array {
  let c = 0
  const choose = (): number => choices[c++ % choices.length] ?? 0
  const out: number[] = []
  const head = (major: number, n: number): void => {
    const widths = [0, 1, 2, 4, 8]
    const minimal = n < 24 ? 0 : n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x100000000 ? 3 : 4
    // Usually the shortest head; sometimes one to four sizes wider (non-canonical).
    const pick = choose() === 0 ? Math.min(4, minimal + 1 + (choose() % 4)) : minimal
    const width = widths[pick] ?? 8
    if (width === 0) {
      out.push((major << 5) | n)
      return
    }
    out.push((major << 5) | { 1: 24, 2: 25, 4: 26, 8: 27 }[width]!)
    for (let i = width - 1; i >= 0; i--) out.push(Math.floor(n / 2 ** (8 * i)) % 256)
  }
  const text = (s: string): void => {
    const b = new TextEncoder().encode(choose() === 1 ? `\ufeff${s}` : s)
    head(3, b.length)
    out.push(...b)
  }
  const walk = (v: unknown): void => {
    if (v === null) out.push(0xf6)
    else if (v === true) out.push(0xf5)
    else if (v === false) out.push(0xf4)
    else if (typeof v === 'number') head(0, Number.isSafeInteger(v) ? Math.abs(v) : 0)
    else if (typeof v === 'string') text(v)
    else if (Array.isArray(v)) {
      head(4, v.length)
      v.forEach(walk)
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>)
      const enc = (k: string): Uint8Array => new TextEncoder().encode(k)
      if (choose() !== 2) entries.sort(([a], [b]) => enc(a).length - enc(b).length || Buffer.compare(enc(a), enc(b)))
      head(5, entries.length)
      for (const [k, x] of entries) {
        text(k)
        walk(x)
      }
    }
  }
  walk(value)
  return new Uint8Array(out)
}

interface Slot {
  set: (v: unknown) => void
}

/** Every place in a JSON-like tree whose value can be replaced (object fields and array items). */
function collectSlots(root: Record<string, unknown>): Slot[] {
  const slots: Slot[] = []
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        slots.push({
          set: v => {
            node[i] = v
          }
        })
        walk(child)
      })
    } else if (typeof node === 'object' && node !== null) {
      const obj = node as Record<string, unknown>
      for (const [k, child] of Object.entries(obj)) {
        slots.push({
          set: v => {
            obj[k] = v
          }
        })
        walk(child)
      }
    }
  }
  walk(root)
  return slots
}
