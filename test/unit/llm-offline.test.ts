/**
 * The offline provider: real trees from the demo goal, different splits per
 * angle, honest outputs, explainable scores, and answers that always pass the
 * same validation a model's answers must pass.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Subgoal } from '../../src/core/events.js'
import { ANGLES, type DecomposeInput } from '../../src/llm/index.js'
import { createOfflineProvider, OFFLINE_BANNER, OFFLINE_MODEL, OFFLINE_OUTPUT_PREFIX } from '../../src/offline/index.js'
import { checkOutput, checkSplit } from '../../src/llm/validate.js'

const p = createOfflineProvider()
const goal = 'plan a two-week trip to Japan'
const rootInput = (angle: string, over: Partial<DecomposeInput> = {}): DecomposeInput => ({
  goal,
  path: [],
  node: { title: goal, detail: '' },
  angle,
  minChildren: 2,
  maxChildren: 7,
  leafHint: false,
  notes: [],
  ...over
})

interface TreeNode {
  title: string
  leaf: boolean
  dependsOn: readonly number[]
  children: TreeNode[]
}

/** Grow the tree the way a swarm of offline decomposers would, down to maxDepth. */
async function grow(angle: string, maxDepth = 3): Promise<TreeNode> {
  const expand = async (
    node: { title: string; detail: string },
    path: string[],
    depth: number
  ): Promise<TreeNode[]> => {
    const split = await p.decompose({
      goal,
      path,
      node,
      angle,
      minChildren: 2,
      maxChildren: 7,
      leafHint: depth + 1 >= maxDepth,
      notes: []
    })
    return await Promise.all(
      split.subgoals.map(async s => ({
        title: s.title,
        leaf: s.leaf || depth + 1 >= maxDepth,
        dependsOn: s.dependsOn,
        children: s.leaf || depth + 1 >= maxDepth ? [] : await expand(s, [...path, node.title], depth + 1)
      }))
    )
  }
  return { title: goal, leaf: false, dependsOn: [], children: await expand({ title: goal, detail: '' }, [], 0) }
}

function leaves(n: TreeNode): TreeNode[] {
  return n.children.length === 0 ? [n] : n.children.flatMap(leaves)
}

function depth(n: TreeNode): number {
  return n.children.length === 0 ? 0 : 1 + Math.max(...n.children.map(depth))
}

function depEdges(n: TreeNode): number {
  return n.children.reduce((sum, c) => sum + c.dependsOn.length + depEdges(c), 0)
}

describe('offline provider', () => {
  it('says it is not a model', () => {
    expect(OFFLINE_BANNER).toBe('no ANTHROPIC_API_KEY: offline heuristics, not a language model')
    expect(p).toMatchObject({ name: 'offline', model: OFFLINE_MODEL, cheapModel: null })
    expect(p.downgrade()).toBe(p)
  })

  it.each(ANGLES)('grows the demo goal into a real tree %s', async angle => {
    const tree = await grow(angle)
    expect(depth(tree)).toBeGreaterThanOrEqual(2)
    expect(leaves(tree).length).toBeGreaterThanOrEqual(8)
    expect(depEdges(tree)).toBeGreaterThanOrEqual(3)
  })

  it('books flights before hotels', async () => {
    const root = await p.decompose(rootInput('by phase'))
    const core = root.subgoals.find(s => s.title === 'Book the core travel')
    expect(core).toMatchObject({ leaf: false, dependsOn: [0] })
    const sub = await p.decompose({ ...rootInput('by phase'), path: [goal], node: core as Subgoal })
    const flights = sub.subgoals.findIndex(s => s.title === 'Book flights')
    const hotels = sub.subgoals.find(s => s.title === 'Book hotels')
    expect(flights).toBeGreaterThanOrEqual(0)
    expect(hotels?.dependsOn).toEqual([flights])
    expect(sub.subgoals.every(s => s.leaf)).toBe(true)
  })

  it('splits by place into the cities of the destination', async () => {
    const out = await p.decompose(rootInput('by place'))
    expect(out.subgoals.map(s => s.title)).toEqual([
      'Arrange travel to and from Japan',
      'Plan the stay in Tokyo (5 nights)',
      'Plan the stay in Kyoto (4 nights)',
      'Plan the stay in Osaka (4 nights)',
      'Plan day trips from the bases'
    ])
    expect(out.rationale).toMatch(/^Offline heuristics, not a language model: .*shape "trip by place"/)
    expect(out.usage).toEqual({ inputTokens: 0, outputTokens: 0 })
  })

  it('gives different splits for different angles', async () => {
    const splits = await Promise.all(
      ANGLES.map(async a => JSON.stringify((await p.decompose(rootInput(a))).subgoals.map(s => s.title)))
    )
    expect(new Set(splits).size).toBe(ANGLES.length)
  })

  it('maps free-form angles onto known ones', async () => {
    const a = await p.decompose(rootInput('by geography'))
    const b = await p.decompose(rootInput('by place'))
    expect(a.subgoals).toEqual(b.subgoals)
  })

  it('splits a goal that lists its own steps, with "then" as a dependency', async () => {
    const text = 'organise a team offsite: book a venue, arrange travel and plan the agenda; then send invitations'
    const out = await p.decompose({ ...rootInput('by time'), goal: text, node: { title: text, detail: '' } })
    expect(out.subgoals.map(s => [s.title, s.leaf, s.dependsOn])).toEqual([
      ['Book a venue', true, []],
      ['Arrange travel', true, []],
      ['Plan the agenda', true, []],
      ['Send invitations', true, [0, 1, 2]]
    ])
  })

  it('proposes something else after a failed attempt', async () => {
    const first = await p.decompose(rootInput('by place'))
    const second = await p.decompose(rootInput('by place', { notes: ['too coarse', 'misses the budget'] }))
    expect(second.subgoals).not.toEqual(first.subgoals)
    expect(second.rationale).toMatch(/rejected the previous attempt \(2 notes\)/)
  })

  it("keeps to the plan's child bounds without dropping steps", async () => {
    const two = await p.decompose(rootInput('by activity', { maxChildren: 2 }))
    expect(two.subgoals).toHaveLength(2)
    expect(two.subgoals.map(s => s.title).join(' ')).toContain('Prepare documents and money')
    const seven = await p.decompose(rootInput('by resource', { minChildren: 7 }))
    expect(seven.subgoals).toHaveLength(7)
    for (const out of [two, seven]) expect(checkSplit(out, 2, 7).ok).toBe(true)
  })

  it('marks every subgoal leaf when the next level is the maximum depth', async () => {
    const out = await p.decompose(rootInput('by time', { leafHint: true }))
    expect(out.subgoals.every(s => s.leaf)).toBe(true)
  })

  it('never claims a task was done', async () => {
    const out = await p.execute({
      goal,
      path: [goal, 'Book the core travel'],
      task: { title: 'Book hotels', detail: 'after the flights' },
      kind: 'leaf',
      inputs: [{ title: 'Book flights', output: 'NH 110, May 1' }]
    })
    expect(out).toMatchObject({ source: 'offline', model: OFFLINE_MODEL, usage: { inputTokens: 0, outputTokens: 0 } })
    expect(out.output.startsWith(`${OFFLINE_OUTPUT_PREFIX} planned step "Book hotels"`)).toBe(true)
    expect(out.output).toContain('Nothing was researched, booked, bought or carried out.')
    expect(out.output).toContain('Inputs considered: "Book flights" (13 characters).')
    expect(out.output).toContain('What a model would do:')
    expect(out.output).toContain('Path: plan a two-week trip to Japan > Book the core travel')
  })

  it('rolls up child outlines into the deliverable', async () => {
    const leaf = async (title: string): Promise<{ title: string; output: string }> => ({
      title,
      output: (await p.execute({ goal, path: [], task: { title, detail: '' }, kind: 'leaf', inputs: [] })).output
    })
    const mid = await p.execute({
      goal,
      path: [goal],
      task: { title: 'Book the core travel', detail: '' },
      kind: 'rollup',
      inputs: [await leaf('Book flights'), await leaf('Book hotels')]
    })
    const top = await p.execute({
      goal,
      path: [],
      task: { title: goal, detail: '' },
      kind: 'rollup',
      inputs: [
        { title: 'Book the core travel', output: mid.output },
        { title: 'Pack', output: 'llm text' }
      ]
    })
    expect(top.output).toContain(
      `Outline:\n- ${goal}\n  - Book the core travel\n    - Book flights\n    - Book hotels\n  - Pack`
    )
    expect(top.output.startsWith(`${OFFLINE_OUTPUT_PREFIX} rolled up 2 results`)).toBe(true)
  })

  it('reviews: accepts outputs that mention the task, rejects the rest', async () => {
    const task = { title: 'Book hotels', detail: '' }
    expect((await p.review({ goal, path: [], task, output: 'plan for book  HOTELS: ...' })).verdict).toBe('accept')
    expect((await p.review({ goal, path: [], task, output: '  ' })).verdict).toBe('reject')
    const off = await p.review({ goal, path: [], task, output: 'something else' })
    expect(off).toMatchObject({
      verdict: 'reject',
      notes: expect.stringMatching(/does not mention the task title "Book hotels"/) as unknown
    })
  })

  it('scores with explained measures and chooses deterministically', async () => {
    const props = await Promise.all(
      ['by place', 'by time', 'by phase'].map(async (a, i) => ({
        id: String(i).repeat(64),
        ...(await p.decompose(rootInput(a)))
      }))
    )
    const vague: Subgoal[] = [
      { title: 'stuff', detail: 'a; b', leaf: true, dependsOn: [] },
      { title: 'stuff things', detail: '', leaf: true, dependsOn: [] }
    ]
    const out = await p.score({
      goal,
      path: [],
      node: { title: goal, detail: '' },
      proposals: [...props, { id: '9'.repeat(64), subgoals: vague, rationale: '' }]
    })
    expect(out.scores.map(s => s.proposal)).toEqual(['0', '1', '2', '9'].map(c => c.repeat(64)))
    for (const s of out.scores) {
      expect(Number.isInteger(s.score) && s.score >= 0 && s.score <= 100).toBe(true)
      expect(s.notes).toMatch(
        /coverage \d\.\d\d \(\d+\/\d+ .*overlap \d\.\d\d.*concreteness \d\.\d\d.*leaf size \d\.\d\d.*= \d+\.$/
      )
    }
    const best = [...out.scores].sort((a, b) => b.score - a.score || a.proposal.localeCompare(b.proposal))[0]
    expect(out.choice).toBe(best?.proposal)
    expect(out.scores[3]?.score).toBeLessThan(50)
    const none = await p.score({
      goal,
      path: [],
      node: { title: goal, detail: '' },
      proposals: [{ id: 'a'.repeat(64), subgoals: vague, rationale: '' }]
    })
    expect(none.choice).toBeNull()
    expect(none.notes).toMatch(/no proposal reached 50/)
    // Same proposals, same ballot.
    expect(
      await p.score({ goal, path: [], node: { title: goal, detail: '' }, proposals: [...props].reverse() })
    ).toMatchObject({ choice: out.choice })
  })

  it("is deterministic, and always within the wire's limits (property)", async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.constantFrom(goal, '- a\n- b b', 'x; then y; z', 'Book flights and hotels', 'visit Paris, Lyon and Nice'),
      fc.string({ unit: 'grapheme', maxLength: 2000 })
    )
    await fc.assert(
      fc.asyncProperty(
        text,
        text,
        fc.constantFrom(...ANGLES, 'by mood'),
        fc.integer({ min: 2, max: 7 }),
        fc.integer({ min: 0, max: 5 }),
        fc.boolean(),
        fc.array(fc.string({ maxLength: 20 }), { maxLength: 2 }),
        async (title, detail, angle, min, extra, leafHint, notes) => {
          const max = Math.min(7, min + extra)
          const input: DecomposeInput = {
            goal: title === '' ? 'g' : title,
            path: ['a'],
            node: { title: title === '' ? 't' : title, detail },
            angle,
            minChildren: min,
            maxChildren: max,
            leafHint,
            notes
          }
          const a = await p.decompose(input)
          const b = await createOfflineProvider().decompose(structuredClone(input))
          expect(b).toEqual(a)
          const checked = checkSplit(a, min, max)
          expect(checked.ok ? 'ok' : checked.problem).toBe('ok')
          const out = await p.execute({
            goal: input.goal,
            path: input.path,
            task: input.node,
            kind: 'rollup',
            inputs: [{ title: 'x', output: detail }]
          })
          expect(checkOutput(out).ok).toBe(true)
        }
      ),
      { numRuns: 150 }
    )
  })
})
