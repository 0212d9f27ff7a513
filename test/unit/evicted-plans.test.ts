/**
 * EvictedPlans holds each evicted plan in typed columns: what goes in comes
 * out, through growth, deletion and slot reuse, and a malformed record (one
 * read back from a damaged store) is refused rather than bent to fit.
 */
import { describe, expect, it } from 'vitest'
import { EvictedPlans } from '../../src/core/evicted-plans.js'
import type { EvictedPlan } from '../../src/core/evicted-plans.js'
import type { PlanSummary } from '../../src/core/fold.js'
import type { PlanId } from '../../src/core/events.js'

const hex = (n: number): string => n.toString(16).padStart(8, '0').repeat(8)
const planId = (n: number): PlanId => `${'a'.repeat(56)}${n.toString(16).padStart(8, '0')}` as PlanId
const record = (n: number): EvictedPlan<PlanSummary> => ({
  hash: hex((n * 2_654_435_761) >>> 0),
  status: (['completed', 'failed', 'cancelled'] as const)[n % 3] as EvictedPlan['status'],
  lastStampMs: 1_790_000_000_000 + n * 1_000.5,
  retainDays: n % 4 === 0 ? null : (n % 3650) + 1
})

describe('EvictedPlans', () => {
  it('gives back every record as it was set, through growth, deletion and reuse', () => {
    const plans = new EvictedPlans<PlanSummary>()
    const model = new Map<PlanId, EvictedPlan<PlanSummary>>()
    for (let n = 0; n < 300; n++) {
      plans.set(planId(n), record(n))
      model.set(planId(n), record(n))
    }
    for (let n = 0; n < 300; n += 3) {
      expect(plans.delete(planId(n))).toBe(true)
      model.delete(planId(n))
    }
    expect(plans.delete(planId(0))).toBe(false)
    // New plans take the freed slots; an existing one is overwritten in place.
    for (let n = 300; n < 350; n++) {
      plans.set(planId(n), record(n))
      model.set(planId(n), record(n))
    }
    plans.set(planId(1), record(7))
    model.set(planId(1), record(7))

    expect(plans.size).toBe(model.size)
    expect([...plans.keys()].sort()).toStrictEqual([...model.keys()].sort())
    for (const [plan, r] of model) {
      expect(plans.get(plan)).toStrictEqual(r)
      expect(plans.hash(plan)).toBe(r.hash)
      expect(plans.facts(plan)).toStrictEqual({
        status: r.status,
        lastStampMs: r.lastStampMs,
        retainDays: r.retainDays
      })
    }
    expect(plans.get(planId(0))).toBeUndefined()
    expect(plans.hash(planId(0))).toBeUndefined()
    expect(plans.has(planId(3))).toBe(false)
  })

  it('keeps a summary only when given one, and drops it when the plan is set again without', () => {
    const plans = new EvictedPlans<PlanSummary>()
    const summary = { plan: planId(1), goal: 'a goal' } as unknown as PlanSummary
    plans.set(planId(1), { ...record(1), summary })
    expect(plans.get(planId(1))?.summary).toBe(summary)
    plans.set(planId(1), record(1))
    expect(plans.get(planId(1))).toStrictEqual(record(1))
  })

  it('refuses a malformed record', () => {
    const bad: Array<[string, EvictedPlan<PlanSummary>]> = [
      ['a hash that is not 64 lowercase hex digits', { ...record(1), hash: 'ABC' }],
      ['an uppercase hash', { ...record(1), hash: hex(0xabcdef01).toUpperCase() }],
      ['an unknown status', { ...record(1), status: 'done' as EvictedPlan<PlanSummary>['status'] }],
      ['a stamp that is not a number', { ...record(1), lastStampMs: Number.NaN }],
      ['a fractional retainDays', { ...record(1), retainDays: 1.5 }],
      ['a retainDays of 0', { ...record(1), retainDays: 0 }]
    ]
    const plans = new EvictedPlans<PlanSummary>()
    for (const [what, r] of bad) {
      expect(EvictedPlans.accepts(r), what).toBe(false)
      expect(() => {
        plans.set(planId(1), r)
      }, what).toThrow(/malformed/)
    }
    expect(plans.size).toBe(0)
  })
})
