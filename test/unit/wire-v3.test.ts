/**
 * Protocol version 3 at the wire (plans that use tools, ADR-0037): a goal
 * with `tools: true`, subgoals that name needs, results that record tool
 * calls and turns; what earlier versions refuse; and how turns count
 * against the budget.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import * as dagCbor from '@ipld/dag-cbor'
import type { PrivateKey } from '@libp2p/interface'
import {
  DEFAULT_PARAMS,
  PROTOCOL_VERSION_3,
  paramsVersion,
  resolveParams,
  type Bodies,
  type Envelope,
  type EventId,
  type PeerIdString,
  type PlanParams,
  type TaskId
} from '../../src/core/events.js'
import { decodeEvent, signRawSync, validateBody, validateParams, type DecodeResult } from '../../src/wire/index.js'
import { MAX_NEEDS, MAX_TOOL_RECORDS, MAX_TURNS } from '../../src/core/limits.js'
import { announcedOffers, meetsNeeds, needsPhrase, offersIn, OFFER_PREFIX } from '../../src/core/needs.js'
import { TEST_SWARM, peerIdOf, testKeys } from '../helpers/arbitraries.js'
import { PlanBuilder, makeEvent } from '../helpers/plan-builder.js'
import { foldAll } from '../../src/core/fold.js'
import { decomposeOffline } from '../../src/offline/decompose.js'
import { executeOffline } from '../../src/offline/execute.js'
import { checkSplit } from '../../src/llm/validate.js'
import { withNeeds } from '../../roles/decomposer.js'

let key: PrivateKey
let ids: PeerIdString[] = []

beforeAll(async () => {
  const keys = await testKeys(4)
  key = keys[0] as PrivateKey
  ids = keys.map(peerIdOf).sort()
})

const hex = (n: number): EventId => n.toString(16).padStart(64, '0') as EventId

function params(over: Record<string, unknown> = {}): PlanParams {
  return { ...DEFAULT_PARAMS, committee: ids.slice(0, 3), quorum: 2, ...over } as PlanParams
}

function goal(v: number, p: object): Envelope {
  return {
    v,
    swarm: TEST_SWARM,
    type: 'goal-submitted',
    plan: '',
    author: peerIdOf(key),
    hlc: { ms: 1_000, c: 0 },
    deps: [],
    body: { text: 'sort the notes', params: p }
  } as unknown as Envelope
}

function decode(env: unknown): DecodeResult {
  return decodeEvent(signRawSync(TEST_SWARM, dagCbor.encode(env), key), { swarm: TEST_SWARM })
}

const verdict = (d: DecodeResult): string => (d.kind === 'rejected' ? `${d.reason}: ${d.detail}` : d.kind)

const split = (subgoals: unknown[]): Record<string, unknown> => ({
  node: hex(5),
  attempt: 1,
  subgoals,
  rationale: 'r',
  usage: { inputTokens: 0, outputTokens: 0 }
})
const sub = (title: string, needs?: unknown): Record<string, unknown> => ({
  title,
  detail: '',
  leaf: true,
  dependsOn: [],
  ...(needs === undefined ? {} : { needs })
})
const result = (extra: Record<string, unknown>): Record<string, unknown> => ({
  task: hex(7),
  claim: hex(1),
  output: 'done',
  usage: { inputTokens: 1, outputTokens: 1 },
  model: 'm',
  source: 'llm',
  ...extra
})
const call = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  server: 'notes',
  tool: 'read_note',
  ms: 12,
  ok: true,
  args: '{"name":"a"}',
  error: null,
  ...over
})

describe('protocol 3 goals', () => {
  it('a v3 goal has tools: true and may use protocol 2 keys beside it', () => {
    expect(verdict(decode(goal(3, params({ tools: true }))))).toBe('event')
    expect(verdict(decode(goal(3, params({ tools: true, executors: 'any' }))))).toBe('event')
    expect(paramsVersion(params({ tools: true }))).toBe(PROTOCOL_VERSION_3)
    expect(resolveParams(params()).tools).toBe(false)
    expect(resolveParams(params({ tools: true })).tools).toBe(true)
  })

  it('tools: false, or no tools, is not a v3 goal; a v1 or v2 goal with tools is wrong-shape', () => {
    expect(verdict(decode(goal(3, params({ tools: false }))))).toMatch(/wrong-shape: .*tools: true/)
    expect(verdict(decode(goal(3, params({ executors: 'any' }))))).toMatch(/wrong-shape/)
    expect(verdict(decode(goal(1, params({ tools: true }))))).toMatch(/wrong-shape: .*unexpected key "tools"/)
    expect(verdict(decode(goal(2, params({ tools: true, executors: 'any' }))))).toMatch(/unexpected key "tools"/)
  })

  it('validateParams takes version 3 from the tools key when not given', () => {
    expect(validateParams(params({ tools: true }))).toBeNull()
    expect(validateParams(params({ tools: 'yes' }))).toMatch(/tools: true/)
  })
})

describe('protocol 3 needs and tool calls', () => {
  it('subgoals may name needs only in v3: 1..MAX_NEEDS sorted capability names', () => {
    expect(validateBody('split-proposed', split([sub('a', ['browser']), sub('b')]), 3)).toBeNull()
    expect(validateBody('split-proposed', split([sub('a', ['notes/read_note', 'x']), sub('b')]), 3)).toBeNull()
    expect(validateBody('split-proposed', split([sub('a', ['browser']), sub('b')]), 2)).toMatch(
      /unexpected key "needs"/
    )
    expect(validateBody('split-proposed', split([sub('a', []), sub('b')]), 3)).toMatch(/needs/)
    expect(validateBody('split-proposed', split([sub('a', ['b', 'a']), sub('b')]), 3)).toMatch(/sorted/)
    expect(validateBody('split-proposed', split([sub('a', ['a b']), sub('b')]), 3)).toMatch(/capability name/)
    expect(validateBody('split-proposed', split([sub('a', ['a/b/c']), sub('b')]), 3)).toMatch(/capability name/)
    const many = Array.from({ length: MAX_NEEDS + 1 }, (_, i) => `t${i}`)
    expect(validateBody('split-proposed', split([sub('a', many), sub('b')]), 3)).toMatch(/needs/)
  })

  it('results record tool calls and turns only in v3, within their caps', () => {
    expect(validateBody('result-reported', result({ toolCalls: [call()], turns: 2 }), 3)).toBeNull()
    expect(validateBody('result-reported', result({}), 3)).toBeNull()
    expect(validateBody('result-reported', result({ toolCalls: [call()] }), 2)).toMatch(/unexpected key "toolCalls"/)
    expect(validateBody('result-reported', result({ turns: 0 }), 3)).toMatch(/turns/)
    expect(validateBody('result-reported', result({ turns: MAX_TURNS + 1 }), 3)).toMatch(/turns/)
    expect(validateBody('result-reported', result({ toolCalls: [call({ ok: 'yes' })] }), 3)).toMatch(/ok/)
    expect(validateBody('result-reported', result({ toolCalls: [call({ args: 'x'.repeat(101) })] }), 3)).toMatch(/args/)
    const lots = Array.from({ length: MAX_TOOL_RECORDS + 1 }, () => call())
    expect(validateBody('result-reported', result({ toolCalls: lots }), 3)).toMatch(/toolCalls/)
    const failed = { task: hex(7), claim: hex(1), error: 'x', usage: { inputTokens: 0, outputTokens: 0 } }
    expect(validateBody('task-failed', { ...failed, turns: 3 }, 3)).toBeNull()
    expect(validateBody('task-failed', { ...failed, turns: 3 }, 1)).toMatch(/unexpected key "turns"/)
  })

  it("a loop's usage counts up to maxTokensPerCall per turn against the budget", () => {
    const author = ids[3] as PeerIdString
    const b = new PlanBuilder(author, ids.slice(0, 3), { maxDepth: 0, maxTokensPerCall: 1_000, tools: true })
    expect(b.goal.env.v).toBe(3)
    const claim = b.claim(author, b.plan as string as TaskId, 2_000)
    const spent = (turns: number | undefined): number => {
      const r = makeEvent({
        v: 3,
        type: 'result-reported',
        plan: b.plan,
        author,
        hlc: { ms: 3_000, c: 0 },
        deps: [b.goal.id, claim.id].sort(),
        body: {
          ...(result({
            claim: claim.id,
            task: b.plan,
            usage: { inputTokens: 5_000, outputTokens: 0 }
          }) as unknown as Bodies['result-reported']),
          ...(turns === undefined ? {} : { turns })
        }
      })
      return foldAll([b.goal, claim, r]).tree(b.plan)?.spentTokens ?? -1
    }
    expect(spent(4)).toBe(4_000)
    expect(spent(10)).toBe(5_000)
    expect(spent(undefined)).toBe(1_000)
  })
})

describe('offers and needs', () => {
  it('an executor meets a need when it offers every name; presence carries offers under a prefix', () => {
    const offers = new Set(offersIn([`${OFFER_PREFIX}notes`, 'interval:3000', `${OFFER_PREFIX}notes/read_note`]))
    expect([...offers].sort()).toStrictEqual(['notes', 'notes/read_note'])
    expect(meetsNeeds(offers, ['notes'])).toBe(true)
    expect(meetsNeeds(offers, ['notes', 'browser'])).toBe(false)
    expect(needsPhrase(['browser'])).toBe('an executor with `browser`')
    expect(needsPhrase(['a', 'b', 'c'])).toBe('an executor with `a`, `b` and `c`')
  })

  it('the announced offer keeps tags and servers first when it must be cut', () => {
    expect(announcedOffers(['s/t2', 'tag', 's', 's/t1'], 3)).toStrictEqual(['s', 'tag', 's/t1'])
  })
})

describe('decomposers and needs', () => {
  const input = {
    goal: "turn the team's notes into a plan for the offsite",
    path: [],
    node: { title: "turn the team's notes into a plan for the offsite", detail: '' },
    angle: 'by phase',
    minChildren: 2,
    maxChildren: 4,
    leafHint: true,
    notes: []
  }

  it('the offline planner marks a subgoal that names an offered tag, or the first when only the goal does', () => {
    const plain = decomposeOffline(input)
    expect(plain.subgoals.every(s => s.needs === undefined)).toBe(true)
    const marked = decomposeOffline({ ...input, tools: ['notes', 'notes/read_note'] })
    expect(marked.subgoals.some(s => s.needs?.includes('notes') === true)).toBe(true)
    expect(marked.subgoals.flatMap(s => s.needs ?? []).every(n => n === 'notes')).toBe(true)
  })

  it("a model's needs are kept only when offered, and only in a plan with tools", () => {
    const split = (needs: unknown): unknown => ({
      subgoals: [
        { title: 'a', detail: '', leaf: true, dependsOn: [], needs },
        { title: 'b', detail: '', leaf: true, dependsOn: [] }
      ],
      rationale: 'r'
    })
    const ok = checkSplit(split(['notes']), 2, 4, ['notes'])
    expect(ok.ok && ok.value.subgoals[0]?.needs).toStrictEqual(['notes'])
    const invented = checkSplit(split(['browser']), 2, 4, ['notes'])
    expect(invented.ok).toBe(false)
    const noTools = checkSplit(split(['notes']), 2, 4, [])
    expect(noTools.ok && noTools.value.subgoals[0]?.needs).toBe(undefined)
    const s = { title: 'a', detail: '', leaf: true, dependsOn: [], needs: ['z', 'notes', 'browser'] }
    expect(withNeeds(s, ['notes', 'z']).needs).toStrictEqual(['notes', 'z'])
    expect(withNeeds(s, []).needs).toBe(undefined)
  })
})

describe('offline runs with tools', () => {
  it("an offline roll-up carries its inputs' tool results up to the deliverable", () => {
    const leaf = [
      'OFFLINE (no model ran): planned step "read"',
      'Tools called (offline: fixed calls with no arguments, not chosen by a model):',
      '- notes/list_notes returned: "offsite.md: the offsite is on 12 March"',
      '',
      'Outline:',
      '- read'
    ].join('\n')
    const base = { goal: 'g', path: [], task: { title: 'g', detail: '' }, kind: 'rollup' as const }
    const mid = executeOffline({ ...base, inputs: [{ title: 'read', output: leaf }] })
    expect(mid).toContain('Tool results in the inputs:\n- notes/list_notes returned: "offsite.md')
    const top = executeOffline({
      ...base,
      inputs: [
        { title: 'part', output: mid },
        { title: 'other', output: 'x' }
      ]
    })
    expect(top).toContain('- notes/list_notes returned: "offsite.md: the offsite is on 12 March"')
    expect(executeOffline({ ...base, inputs: [{ title: 'other', output: 'x' }] })).not.toContain('Tool results')
  })
})
