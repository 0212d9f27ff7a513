import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../src/core/tree-hash.js'

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
