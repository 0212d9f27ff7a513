/**
 * Validation of a model's tool input: what passes is exactly what the wire
 * accepts, and every problem is told in words a model can act on.
 */
import { describe, expect, it } from 'vitest'
import { MAX_DETAIL_CHARS, MAX_NOTES_CHARS, MAX_OUTPUT_CHARS, MAX_RATIONALE_CHARS } from '../../src/core/limits.js'
import { checkOutput, checkReview, checkScore, checkSplit, MAX_ANSWER_BYTES } from '../../src/llm/validate.js'

const sub = (
  title: string,
  dependsOn: unknown[] = [],
  extra: Record<string, unknown> = {}
): Record<string, unknown> => ({ title, detail: '', leaf: false, dependsOn, ...extra })

describe('checkSplit', () => {
  it('accepts a valid split and sorts dependsOn', () => {
    const r = checkSplit({ subgoals: [sub('a'), sub('b', [0]), sub('c', [1, 0], { extra: 1 })], rationale: 'r' }, 2, 7)
    expect(r).toEqual({
      ok: true,
      value: {
        subgoals: [
          { title: 'a', detail: '', leaf: false, dependsOn: [] },
          { title: 'b', detail: '', leaf: false, dependsOn: [0] },
          { title: 'c', detail: '', leaf: false, dependsOn: [0, 1] }
        ],
        rationale: 'r'
      }
    })
  })

  it.each([
    ['not an object', 'x', /expected an object/],
    ['no subgoals', { rationale: '' }, /subgoals: expected an array, got nothing/],
    ["fewer than the plan's minimum", { subgoals: [sub('a'), sub('b')], rationale: '' }, /2 subgoals, expected 3 to 7/],
    [
      "more than the plan's maximum",
      { subgoals: 'abcdefgh'.split('').map(c => sub(c)), rationale: '' },
      /8 subgoals, expected 3 to 7/
    ],
    [
      'an empty title',
      { subgoals: [sub('a'), sub(' \u0085 '), sub('c')], rationale: '' },
      /subgoals\[1\]\.title: empty/
    ],
    ['a title too long', { subgoals: [sub('a'), sub('b'.repeat(201)), sub('c')], rationale: '' }, /201 characters/],
    [
      'a detail too long',
      { subgoals: [sub('a', [], { detail: 'd'.repeat(MAX_DETAIL_CHARS + 1) }), sub('b'), sub('c')], rationale: '' },
      /subgoals\[0\]\.detail: 2001 characters/
    ],
    [
      'a leaf that is not a boolean',
      { subgoals: [sub('a', [], { leaf: 'yes' }), sub('b'), sub('c')], rationale: '' },
      /leaf: expected true or false/
    ],
    [
      'case-folded duplicate titles',
      { subgoals: [sub('Book'), sub('b'), sub('BOOK ')], rationale: '' },
      /subgoals\[2\]\.title: same as the title of subgoals\[0\]/
    ],
    [
      'a dependency out of range',
      { subgoals: [sub('a', [3]), sub('b'), sub('c')], rationale: '' },
      /index 3 is out of range \(there are 3 subgoals, indexes 0\.\.2\)/
    ],
    [
      'a fractional index',
      { subgoals: [sub('a', [1.5]), sub('b'), sub('c')], rationale: '' },
      /expected integer indexes/
    ],
    ['a string index', { subgoals: [sub('a', ['1']), sub('b'), sub('c')], rationale: '' }, /expected integer indexes/],
    ['a self-dependency', { subgoals: [sub('a'), sub('b', [1]), sub('c')], rationale: '' }, /cannot depend on itself/],
    [
      'a repeated dependency',
      { subgoals: [sub('a'), sub('b', [0, 0]), sub('c')], rationale: '' },
      /index 0 is listed twice/
    ],
    ['a cycle', { subgoals: [sub('a', [2]), sub('b', [0]), sub('c', [1])], rationale: '' }, /cycle/],
    [
      'a rationale too long',
      { subgoals: [sub('a'), sub('b'), sub('c')], rationale: 'r'.repeat(MAX_RATIONALE_CHARS + 1) },
      /rationale: 4001 characters/
    ],
    ['a lone surrogate', { subgoals: [sub('a\ud800'), sub('b'), sub('c')], rationale: '' }, /not well-formed/],
    ['a byte-order mark', { subgoals: [sub('\ufeffa'), sub('b'), sub('c')], rationale: '' }, /byte-order mark/]
  ])('rejects %s', (_name, input, problem) => {
    const r = checkSplit(input, 3, 7)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.problem).toMatch(problem)
  })

  it('rejects a split too big for one event in UTF-8', () => {
    const heavy = (t: string): Record<string, unknown> => sub(t, [], { detail: '語'.repeat(MAX_DETAIL_CHARS) })
    const r = checkSplit(
      { subgoals: 'abcdefg'.split('').map(heavy), rationale: '語'.repeat(MAX_RATIONALE_CHARS) },
      2,
      7
    )
    expect(r).toEqual({
      ok: false,
      problem: expect.stringMatching(new RegExp(`bytes of UTF-8, more than ${MAX_ANSWER_BYTES}`)) as unknown
    })
  })
})

describe('checkScore', () => {
  const ids = ['a'.repeat(64), 'b'.repeat(64)]
  const labels = ['P1', 'P2']
  const s = (proposal: unknown, score: unknown, notes: unknown = ''): Record<string, unknown> => ({
    proposal,
    score,
    notes
  })

  it('maps labels and ids to ids, in the order given', () => {
    const r = checkScore({ scores: [s(ids[1], 40), s('P1', 90, 'good')], choice: 'P1', notes: 'n' }, labels, ids)
    expect(r).toEqual({
      ok: true,
      value: {
        scores: [
          { proposal: ids[0], score: 90, notes: 'good' },
          { proposal: ids[1], score: 40, notes: '' }
        ],
        choice: ids[0],
        notes: 'n'
      }
    })
    expect(checkScore({ scores: [s('P1', 0), s('P2', 100)], choice: null, notes: '' }, labels, ids)).toMatchObject({
      ok: true,
      value: { choice: null }
    })
  })

  it.each([
    ['a missing proposal', { scores: [s('P1', 5)], choice: null, notes: '' }, /no score for P2/],
    ['a proposal scored twice', { scores: [s('P1', 5), s(ids[0], 6)], choice: null, notes: '' }, /P1 is scored twice/],
    ['an unknown proposal', { scores: [s('P3', 5)], choice: null, notes: '' }, /"P3" is not one of P1, P2/],
    [
      'a fractional score',
      { scores: [s('P1', 5.5), s('P2', 1)], choice: null, notes: '' },
      /expected an integer from 0 to 100, got the number 5.5/
    ],
    [
      'a score over 100',
      { scores: [s('P1', 101), s('P2', 1)], choice: null, notes: '' },
      /expected an integer from 0 to 100/
    ],
    ['a score as a string', { scores: [s('P1', '80'), s('P2', 1)], choice: null, notes: '' }, /got the string "80"/],
    [
      'an unknown choice',
      { scores: [s('P1', 1), s('P2', 1)], choice: 'none', notes: '' },
      /choice: the string "none" is not one of P1, P2 \(use null to accept none\)/
    ],
    ['a missing choice', { scores: [s('P1', 1), s('P2', 1)], notes: '' }, /choice: nothing/],
    [
      'notes too long',
      { scores: [s('P1', 1, 'n'.repeat(MAX_NOTES_CHARS + 1)), s('P2', 1)], choice: null, notes: '' },
      /scores\[0\]\.notes: 4001 characters/
    ]
  ])('rejects %s', (_name, input, problem) => {
    const r = checkScore(input, labels, ids)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.problem).toMatch(problem)
  })
})

describe('checkOutput and checkReview', () => {
  it('accepts an output within the caps and rejects the rest', () => {
    expect(checkOutput({ output: 'done' })).toEqual({ ok: true, value: { output: 'done' } })
    expect(checkOutput({ output: '' })).toMatchObject({ ok: false, problem: 'output: empty' })
    expect(checkOutput({ output: 'x'.repeat(MAX_OUTPUT_CHARS + 1) })).toMatchObject({
      ok: false,
      problem: `output: ${MAX_OUTPUT_CHARS + 1} characters, more than the limit of ${MAX_OUTPUT_CHARS}; write it shorter`
    })
    expect(checkOutput({ output: '語'.repeat(MAX_OUTPUT_CHARS) }).ok).toBe(true)
  })

  it('accepts accept and reject verdicts only', () => {
    expect(checkReview({ verdict: 'reject', notes: 'vague' })).toEqual({
      ok: true,
      value: { verdict: 'reject', notes: 'vague' }
    })
    expect(checkReview({ verdict: 'maybe', notes: '' })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/verdict: expected "accept" or "reject"/) as unknown
    })
  })
})
