/**
 * The dashboard's Standing panel in a real browser (playwright-core driving
 * Debian's chromium; ADR-0048): each member with evidence against it, the
 * worst first, a poor record marked, and how many more there are. The
 * source is a stub served by the real dashboard routes on the real HTTP
 * server. Skipped, saying so, when /usr/bin/chromium is missing (CI installs it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_STANDING_LINES } from '../../src/http/dashboard/state.js'
import { StandingBook } from '../../src/core/peer-standing.js'
import { HAS_CHROMIUM, NO_CHROMIUM_MESSAGE, dashboardInBrowser } from '../helpers/browser.js'
import type { DashboardSource } from '../../src/http/dashboard/state.js'
import type { EventId, PeerIdString, PlanId } from '../../src/core/events.js'
import type { TestBrowser } from '../helpers/browser.js'

const UI_MS = 60_000
const POOR = '12D3KooWPoorRecordPeerAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' as PeerIdString

if (!HAS_CHROMIUM) console.warn(NO_CHROMIUM_MESSAGE)

describe.skipIf(!HAS_CHROMIUM)('the dashboard’s Standing panel', () => {
  let url: string
  let browser: TestBrowser
  let stop: (() => Promise<void>) | undefined

  beforeAll(async () => {
    const book = new StandingBook()
    const plan = 'c'.repeat(64) as PlanId
    let n = 0
    const item = (
      author: PeerIdString,
      kind: 'equivocation' | 'late'
    ): { author: PeerIdString; kind: typeof kind; event: EventId } => ({
      author,
      kind,
      event: `e${n++}` as EventId
    })
    const others = Array.from({ length: MAX_STANDING_LINES + 1 }, (_, i) => `12D3KooWLate${i}` as PeerIdString)
    book.set(plan, {
      equivocators: [POOR],
      evidence: [item(POOR, 'equivocation'), item(POOR, 'equivocation'), ...others.map(p => item(p, 'late'))]
    })
    const source: DashboardSource = {
      now: () => Date.now(),
      status: () => ({
        peerId: '12D3KooWObserver',
        role: 'observer',
        swarm: 's',
        peers: 0,
        roster: [],
        events: { held: 0, parked: 0 }
      }),
      plans: () => [],
      tree: () => undefined,
      treeHash: () => undefined,
      onFolded: () => () => undefined,
      rejected: () => ({}),
      standing: () => book.records(),
      submit: async () => await Promise.reject(new Error('read-only')),
      cancel: async () => await Promise.reject(new Error('read-only'))
    }
    ;({ url, browser, stop } = await dashboardInBrowser(source))
  }, 120_000)

  afterAll(async () => {
    await stop?.()
  })

  it('lists the members with evidence, the poor one first and marked, and counts the rest', async () => {
    const page = await browser.context.newPage()
    const errors: string[] = []
    page.on('pageerror', e => errors.push(e.message))
    await page.goto(`${url}/`)
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: UI_MS })
    const first = page.locator('#standing li').first()
    await first.waitFor({ timeout: UI_MS })
    expect(await first.getAttribute('data-peer')).toBe(POOR)
    expect(await first.textContent()).toContain('poor record: 2 equivocation in 1 plan')
    expect(await page.locator('#standing li').count()).toBe(MAX_STANDING_LINES)
    expect(await page.locator('#standing li.poor').count()).toBe(1)
    expect(await page.locator('#standing-more').textContent()).toBe('and 2 more (GET /standing lists every one)')
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
