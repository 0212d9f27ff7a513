/**
 * Goals a node takes from its dashboard and MCP in a minute
 * (`--goals-per-minute`): a sliding window of 60 s, a reason with the wait,
 * 0 for no limit; and the dashboard's submit answers 429 with that reason,
 * publishing nothing.
 */
import { describe, expect, it } from 'vitest'
import { GoalRate } from '../../src/author/goal-rate.js'
import { dashboardSource } from '../../src/http/dashboard/peer-source.js'
import { DashboardRequestError } from '../../src/http/dashboard/guard.js'
import type { NodeView } from '../../src/ports/node-view.js'

describe('goals a minute', () => {
  it('takes up to the limit in any 60 s, then says how long to wait', () => {
    const rate = new GoalRate(2)
    expect(rate.refusal(0)).toBeNull()
    rate.took(0)
    rate.took(10_000)
    expect(rate.refusal(30_000)).toBe(
      'this node takes at most 2 goals a minute (--goals-per-minute), and 2 came in the last minute: try again in 30 s'
    )
    // The first goal leaves the window at 60 s: one more may go.
    expect(rate.refusal(60_000)).toBeNull()
    rate.took(60_000)
    expect(rate.refusal(60_001)).toMatch(/try again in 10 s$/)
  })

  it('0 is no limit', () => {
    const rate = new GoalRate(0)
    for (let i = 0; i < 1_000; i++) rate.took(i)
    expect(rate.refusal(1_000)).toBeNull()
  })

  it('the dashboard refuses a goal over the rate with 429 and publishes nothing', async () => {
    const published: string[] = []
    let now = 1_000
    const scorer = '12D3KooWQ3tjbcEiypYp2Yq3ajJ8yDiBCr6gMAWEBDYnRWSrcQLD'
    const view = {
      me: '12D3KooWJhnZxY9mJmLkbQAbd4xKvrbsQXp5eTZ6cuxTVK16ZTkX',
      now: () => now,
      roster: () => [{ peerId: scorer, role: 'scorer' }],
      held: () => null,
      publish: async (type: string) => {
        published.push(type)
        return { event: { id: `e${published.length}` } }
      }
    } as unknown as NodeView
    const source = dashboardSource(view, new GoalRate(1))
    await source.submit('plan a picnic', {})
    now += 5_000
    const refused = await source.submit('plan a second picnic', {}).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(DashboardRequestError)
    expect((refused as DashboardRequestError).status).toBe(429)
    expect((refused as Error).message).toMatch(/at most 1 goal a minute .*try again in 55 s/)
    expect(published).toEqual(['goal-submitted'])
  })
})
