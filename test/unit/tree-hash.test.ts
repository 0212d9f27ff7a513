import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { foldAll } from '../../src/core/fold.js'
import { sha256HexOfText } from '../../src/core/hash.js'
import { canonicalJson } from '../../src/core/tree-hash.js'
import { nativeSha256HexOfText } from '../../src/sync/native-hash.js'
import { encodeEnvelope, joinWire } from '../../src/wire/codec.js'
import { decodeEvent } from '../../src/wire/decode.js'
import type { PlanEvent } from '../../src/core/events.js'
import { generatePlan, loadActors } from '../helpers/plan-gen.js'

describe('canonicalJson (what treeHash hashes)', () => {
  it('gives the same text whatever order the keys were set in, at every depth', () => {
    const a = { b: 1, a: { y: [{ q: 1, p: 2 }], x: null }, c: 'z' }
    const b = { c: 'z', a: { x: null, y: [{ p: 2, q: 1 }] }, b: 1 }
    expect(canonicalJson(a)).toBe(canonicalJson(b))
    expect(canonicalJson(a)).toBe('{"a":{"x":null,"y":[{"p":2,"q":1}]},"b":1,"c":"z"}')
  })

  it('keeps array order (arrays are ordered data)', () => {
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]))
  })
})

describe('the native text hash the runtime gives the fold', () => {
  it("equals the core's pure SHA-256 for every string, long ones across chunk boundaries included", () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      // Lone surrogates: both sides must encode them the same way (U+FFFD).
      fc
        .array(fc.constantFrom('a', 'é', '\ud83d\ude00', '\ud800', '\udfff', '"'), { maxLength: 200 })
        .map(xs => xs.join('')),
      // Longer than the core's 64 KiB encoding chunk, with a multi-byte character straddling the edge.
      fc.nat({ max: 8 }).map(k => 'x'.repeat(65_536 - k) + '\ud83d\ude00é'.repeat(3))
    )
    fc.assert(
      fc.property(text, s => sha256HexOfText(s) === nativeSha256HexOfText(s)),
      { numRuns: 1000 }
    )
  })

  it('gives the fold the same tree hashes as the pure one', async () => {
    const { events, plan } = generatePlan(7, await loadActors())
    const pure = foldAll(events)
    const native = foldAll(events, { hashText: nativeSha256HexOfText })
    expect(native.treeHash(plan)).toBe(pure.treeHash(plan))
  })
})

describe('derived trees are canonical as built', () => {
  it(
    'every object of a tree folded from decoded events has its keys in sorted order but the ' +
      "goal's params (so hashing copies nothing)",
    async () => {
      const p = generatePlan(11, await loadActors())
      const decoded = p.events.map(e => {
        const d = decodeEvent(joinWire(encodeEnvelope(e.env), new Uint8Array(64)), {
          swarm: e.env.swarm,
          verify: false
        })
        if (d.kind !== 'event') throw new Error(`decode: ${JSON.stringify(d)}`)
        return d.event as PlanEvent
      })
      const tree = foldAll(decoded).tree(p.plan)
      const unsorted: string[] = []
      JSON.stringify(tree, (key, v: unknown) => {
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
          const keys = Object.keys(v)
          if (keys.some((k, i) => i > 0 && (keys[i - 1] as string) > k)) unsorted.push(key)
        }
        return v
      })
      expect(unsorted).toStrictEqual(['params'])
    }
  )
})
