/**
 * planParams with protocol 2's flags: `--approver ID` (repeatable),
 * `--approve splits|results|both`, `--executors model|outside|any`. A goal
 * that uses none of them stays protocol 1, with exactly the v1 keys.
 */
import { beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_TRUST, paramsVersion } from '../../src/core/events.js'
import { validateParams } from '../../src/wire/shape.js'
import { planParams, scorersInSight } from '../../src/author/author-events.js'
import type { NodeView } from '../../src/ports/node-view.js'
import { peerIdOf, testKeys } from '../helpers/arbitraries.js'
import type { PeerIdString } from '../../src/core/events.js'

let ids: PeerIdString[] = []
beforeAll(async () => {
  ids = (await testKeys(4)).map(peerIdOf).sort()
})

describe('planParams: approvers and executors', () => {
  it('without the new flags: a v1 goal with exactly the v1 keys', () => {
    const p = planParams({}, ids.slice(0, 2))
    expect(paramsVersion(p)).toBe(1)
    expect(Object.hasOwn(p, 'approvers') || Object.hasOwn(p, 'executors')).toBe(false)
    expect(validateParams(p, 'params', 1)).toBeNull()
    expect(paramsVersion(planParams({ executors: 'model' }, ids.slice(0, 2)))).toBe(1)
  })

  it(
    '--approver adds the person to the committee; the default quorum counts them; --approve ' +
      'defaults to both, or splits without review',
    () => {
      const scorers = ids.slice(0, 2)
      const person = ids[3] as PeerIdString
      const p = planParams({ approver: [person] }, scorers)
      expect(p.committee).toStrictEqual([...scorers, person].sort())
      expect(p.quorum).toBe(2)
      expect(p.approvers).toStrictEqual({ ids: [person], for: 'splits' })
      expect(paramsVersion(p)).toBe(2)
      expect(validateParams(p, 'params', 2)).toBeNull()
      expect(planParams({ approver: [person], review: true }, scorers).approvers?.for).toBe('both')
      expect(planParams({ approver: [person], review: true, approve: 'results' }, scorers).approvers?.for).toBe(
        'results'
      )
    }
  )

  it('repeated and comma-separated approvers are sorted without repeats', () => {
    const a = ids[2] as PeerIdString
    const b = ids[3] as PeerIdString
    expect(planParams({ approver: [b, `${a},${b}`] }, ids.slice(0, 2)).approvers?.ids).toStrictEqual([a, b].sort())
  })

  it('--executors outside or any makes a v2 goal', () => {
    const p = planParams({ executors: 'outside' }, ids.slice(0, 1))
    expect(p.executors).toBe('outside')
    expect(p.approvers).toBeUndefined()
    expect(paramsVersion(p)).toBe(2)
    expect(planParams({ executors: 'any' }, ids.slice(0, 1)).executors).toBe('any')
  })

  it('says what to change for a bad value', () => {
    expect(() => planParams({ approver: ['bob'] }, ids.slice(0, 1))).toThrow(/--approver: "bob" is not a peer id/)
    expect(() => planParams({ approve: 'splits' }, ids.slice(0, 1))).toThrow(/--approve needs --approver/)
    expect(() => planParams({ approver: [ids[1] as string], approve: 'results' }, ids.slice(0, 1))).toThrow(
      /add --review/
    )
    expect(() => planParams({ approver: [ids[1] as string], approve: 'everything' }, ids.slice(0, 1))).toThrow(
      /--approve "everything": expected one of splits, results, both/
    )
    expect(() => planParams({ executors: 'robots' }, ids.slice(0, 1))).toThrow(
      /--executors "robots": expected one of model, outside, any/
    )
  })

  it('--trust makes a v5 goal with the default claim window, beside any other flag', () => {
    const p = planParams({ trust: true, 'retain-days': '7', review: true }, ids.slice(0, 1))
    expect(p.trust).toEqual(DEFAULT_TRUST)
    expect(paramsVersion(p)).toBe(5)
    expect(validateParams(p, 'params', 5)).toBeNull()
    expect(Object.hasOwn(planParams({ trust: false }, ids.slice(0, 1)), 'trust')).toBe(false)
  })

  it('--review-one-in sets the review sample of a --trust goal; alone or out of range it is refused', () => {
    const p = planParams({ trust: true, 'review-one-in': '4' }, ids.slice(0, 1))
    expect(p.trust).toEqual({ ...DEFAULT_TRUST, reviewOneIn: 4 })
    expect(validateParams(p)).toBeNull()
    expect(planParams({ trust: true, 'review-one-in': '0' }, ids.slice(0, 1)).trust?.reviewOneIn).toBe(0)
    expect(() => planParams({ 'review-one-in': '4' }, ids.slice(0, 1))).toThrow(/--review-one-in needs --trust/)
    for (const bad of ['-1', '1001', 'four', '2.5'])
      expect(() => planParams({ trust: true, 'review-one-in': bad }, ids.slice(0, 1))).toThrow(
        /--review-one-in .*: expected a whole number from 0 to 1000/
      )
  })

  it('--retain-days makes a v4 goal; out of range, it is refused at submit and by the wire', () => {
    const p = planParams({ 'retain-days': '7', 'use-tools': true }, ids.slice(0, 1))
    expect(p.retainDays).toBe(7)
    expect(paramsVersion(p)).toBe(4)
    expect(validateParams(p)).toBeNull()
    expect(paramsVersion(planParams({}, ids.slice(0, 1)))).toBe(1)
    for (const bad of ['0', '-1', '1.5', '3651', 'soon', ''])
      expect(() => planParams({ 'retain-days': bad }, ids.slice(0, 1)), bad).toThrow(
        /--retain-days .*expected whole days from 1 to 3650; leave it out to keep the plan 30 days/
      )
    // What reaches the wire anyway is refused there, as wrong-shape on every node.
    const base = planParams({}, ids.slice(0, 1))
    for (const bad of [0, -1, 1.5, 3651, '7'])
      expect(validateParams({ ...base, retainDays: bad }), String(bad)).toMatch(/params\.retainDays: /)
    expect(validateParams({ ...base, retainDays: 7, tools: false })).toMatch(/params\.tools: true or absent/)
    // A v1 goal may not carry it: its keys are exact.
    expect(validateParams({ ...base, retainDays: 7 }, 'params', 1)).toMatch(/retainDays/)
  })
})

describe('scorersInSight: the default committee', () => {
  const roster = (peers: Array<[PeerIdString, string]>) => () =>
    peers.map(([peerId, role]) => ({ peerId, role }) as unknown as ReturnType<NodeView['roster']>[number])

  it('names the scorers in the roster, and the node itself when it is a scorer (its roster lists only others)', () => {
    const [a, b, c] = ids as [PeerIdString, PeerIdString, PeerIdString]
    const others = roster([
      [b, 'scorer'],
      [c, 'executor'],
      [b, 'scorer']
    ])
    expect(scorersInSight({ me: a, role: 'executor', roster: others })).toEqual([b])
    expect(scorersInSight({ me: a, role: 'scorer', roster: others })).toEqual([a, b].sort())
    expect(scorersInSight({ me: a, role: 'scorer', roster: roster([]) })).toEqual([a])
  })
})
