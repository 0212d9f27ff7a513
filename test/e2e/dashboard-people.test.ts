/**
 * A person on the committee through the observer's dashboard, in a real
 * browser (playwright-core driving Debian's chromium), against real
 * processes on loopback: an observer with --allow-submit (the person: its
 * key is the approver), a decomposer, two scorers, an executor, and the fake
 * Messages API. A plan submitted from the command line names the observer
 * the approver of splits and results, with review:
 *   - the "awaiting you" panel lists the split with the proposal's subgoals
 *     and both scorers' scores; the tree says the root waits for "you";
 *   - a vote without the token, and one from a foreign Origin, are refused
 *     and publish nothing;
 *   - notes typed and "Choose" clicked: the item says sent and goes, the
 *     split is applied with the observer's ballot and notes;
 *   - each result then waits in the panel; "Accept" (with notes on one)
 *     for each, and the plan completes.
 * Screenshots of the panel (desktop and phone) go to test-results/.
 * Skipped, saying so, when /usr/bin/chromium is missing (CI installs it).
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  EXIT,
  REPO_ROOT,
  cliEnv,
  removeTempDirs,
  runCli,
  spawnCli,
  stopCliChildren,
  tempDir
} from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { HAS_CHROMIUM, NO_CHROMIUM_MESSAGE, launchBrowser } from '../helpers/browser.js'
import { startFakeLlm } from '../helpers/fake-llm.js'
import type { Page } from 'playwright-core'
import type { CliChild } from '../helpers/cli-process.js'
import type { TestBrowser } from '../helpers/browser.js'
import type { FakeLlm } from '../helpers/fake-llm.js'

const SWARM = 'dashboard-people-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 60_000
const PLAN_MS = 90_000
const UI_MS = 30_000
/** The panel with a split to choose, for a look (not compared with anything). */
const SCREENSHOT = join(REPO_ROOT, 'test-results', 'dashboard-people.png')

if (!HAS_CHROMIUM) console.warn(NO_CHROMIUM_MESSAGE)

interface Started {
  http: string
  dashboard: string
  submitToken: string
  addresses: string[]
  peerId: string
}
type Structured = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

describe.skipIf(!HAS_CHROMIUM)('a person on the committee, from the dashboard', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let fake: FakeLlm
  let observer: Started
  let browser: TestBrowser
  const scorers: string[] = []
  const nodes: CliChild[] = []
  const pageErrors: string[] = []

  const plan = async (id: string): Promise<Structured | undefined> => {
    const r = await fetch(`${observer.http}/plans/${id}`)
    return r.ok ? ((await r.json()) as Structured).tree : undefined
  }
  const held = async (): Promise<number> =>
    ((await (await fetch(`${observer.http}/status`)).json()) as Structured).events.held

  beforeAll(async () => {
    home = tempDir('dashboard-people')
    fake = await startFakeLlm({ auto: { children: 2, leafDepth: 1 } })
    env = cliEnv(home, { ANTHROPIC_API_KEY: 'fake', ANTHROPIC_BASE_URL: fake.url })
    const o = spawnCli(
      [
        '--role',
        'observer',
        ...COMMON,
        '--data-dir',
        join(home, 'observer'),
        '--http',
        '127.0.0.1:0',
        '--allow-submit',
        '--json'
      ],
      { env, name: 'observer' }
    )
    nodes.push(o)
    observer = (await o.waitForJson(x => x.event === 'started', START_MS)) as unknown as Started
    const seed = observer.addresses[0] as string
    for (const [role, dir] of [
      ['decomposer', 'decomposer'],
      ['scorer', 'scorer-a'],
      ['scorer', 'scorer-b'],
      ['executor', 'executor']
    ] as const) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, dir), '--bootstrap', seed, '--json'], {
          env,
          name: dir
        })
      )
    }
    const [browserStarted, ...started] = await Promise.all([
      launchBrowser(),
      ...nodes.slice(1).map(async n => await n.waitForJson(x => x.event === 'started', START_MS))
    ])
    browser = browserStarted
    for (const s of started) if (s.role === 'scorer') scorers.push(s.peerId as string)
    await waitUntil(
      'the observer to see every role',
      async () => {
        const s = (await (await fetch(`${observer.http}/status`)).json()) as { roster: Array<{ role: string }> }
        const roles = s.roster.map(r => r.role)
        return roles.filter(r => r === 'scorer').length === 2 &&
          roles.includes('decomposer') &&
          roles.includes('executor')
          ? true
          : undefined
      },
      START_MS
    )
  }, 2 * START_MS)

  afterAll(async () => {
    await browser?.close()
    await stopCliChildren()
    await fake?.close()
    removeTempDirs()
  }, 60_000)

  /** The panel's item for this plan, of one kind, not yet answered. */
  const item = (page: Page, id: string, ask: 'split' | 'review'): ReturnType<Page['locator']> =>
    page.locator(`#awaiting-list li.await-item[data-plan="${id}"][data-ask="${ask}"]`)

  it(
    'the person chooses a split and accepts the results from the page; refused votes publish nothing',
    async () => {
      expect(observer.submitToken).toMatch(/^[A-Za-z0-9_-]{32}$/)
      const submitted = await runCli(
        [
          'submit',
          'plan a neighbourhood seed library',
          '--committee',
          scorers.join(','),
          '--approver',
          observer.peerId,
          '--approve',
          'both',
          '--review',
          '--max-depth',
          '1',
          '--json',
          ...COMMON,
          '--bootstrap',
          observer.addresses[0] as string,
          '--data-dir',
          join(home, 'client')
        ],
        { env },
        START_MS
      )
      expect(submitted.code, submitted.stderr).toBe(EXIT.OK)
      const id = JSON.parse(submitted.stdout.trim().split('\n')[0] as string).plan as string

      const page = await browser.context.newPage()
      page.on('pageerror', e => {
        pageErrors.push(e.message)
      })
      await page.goto(`${observer.dashboard}#token=${observer.submitToken}`)
      await page.locator('#conn[data-state="live"]').waitFor({ timeout: UI_MS })
      await page.locator('#awaiting').waitFor({ state: 'visible', timeout: UI_MS })
      // What each item said once its answer was sent, recorded in the page (an item may go with the next snapshot, 0.4 s later).
      await page.evaluate(() => {
        const w = window as unknown as { said: Record<string, string> }
        w.said = {}
        const list = document.getElementById('awaiting-list') as HTMLElement
        new MutationObserver(() => {
          for (const m of Array.from(list.querySelectorAll('li.await-item .msg[data-kind="ok"]'))) {
            const key =
              (m.closest('li.await-item') as HTMLElement).dataset.task ??
              (m.closest('li.await-item') as HTMLElement).dataset.node ??
              ''
            w.said[key] = m.textContent ?? ''
          }
        }).observe(list, { childList: true, subtree: true, attributes: true, characterData: true })
      })
      const said = async (key: string): Promise<string | undefined> =>
        await page.evaluate(k => (window as unknown as { said: Record<string, string> }).said[k], key)

      // The split waits for the person, with the proposal's subgoals and both scorers' scores side by side.
      const split = item(page, id, 'split')
      await split.waitFor({ timeout: PLAN_MS })
      await waitUntil(
        "both scorers' scores on the proposal",
        async () =>
          (await split.locator('.proposal-card').first().locator('[data-scorer]').count()) === 2 ? true : undefined,
        PLAN_MS,
        250
      )
      const card = split.locator('.proposal-card').first()
      expect(await card.locator('ol.subgoals li').count()).toBe(2)
      expect(await split.locator('.await-title').textContent()).toBe('plan a neighbourhood seed library')
      const scorerIds = await card
        .locator('[data-scorer]')
        .evaluateAll(es => es.map(e => e.getAttribute('data-scorer')))
      expect(scorerIds.sort()).toEqual([...scorers].sort())
      // The tree says whom the root waits for: this observer's key, named "you".
      await waitUntil(
        'the tree to say the root waits for you',
        async () => {
          const t = await page
            .locator('#tree li[data-node] .waits-for')
            .first()
            .textContent({ timeout: 1_000 })
            .catch(() => null)
          return t !== null && /waits for you/.test(t) ? true : undefined
        },
        UI_MS,
        250
      )
      const root = (await plan(id)) as Structured
      expect(root.nodes[0].awaiting).toEqual([observer.peerId])
      const proposal = (await card.getAttribute('data-proposal')) as string
      expect(root.nodes[0].attempts[0].proposals.map((p: Structured) => p.id)).toContain(proposal)

      mkdirSync(dirname(SCREENSHOT), { recursive: true })
      await page.screenshot({ path: SCREENSHOT })
      // The panel fits a phone's width, proposals and all.
      await page.setViewportSize({ width: 390, height: 844 })
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(1)
      await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-phone.png'), fullPage: true })
      await page.setViewportSize({ width: 1280, height: 900 })

      // Refused without the token, and from another Origin: nothing is published.
      const before = await held()
      const vote = JSON.stringify({ plan: id, node: root.nodes[0].id, choice: proposal, notes: '' })
      const noToken = await fetch(`${observer.http}/api/vote`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: vote
      })
      expect(noToken.status).toBe(401)
      expect(((await noToken.json()) as Structured).error).toMatch(/missing token/)
      const foreign = await fetch(`${observer.http}/api/vote`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          origin: 'http://evil.example',
          'x-plan-swarm-token': observer.submitToken
        },
        body: vote
      })
      expect(foreign.status).toBe(403)
      expect(((await foreign.json()) as Structured).error).toMatch(/cross-origin/)
      // "None of these" without notes is stopped in the page, before anything is sent.
      await split.locator('button[data-action="none"]').click()
      expect(await split.locator('.msg[data-kind="error"]').textContent()).toMatch(/needs notes/)
      await new Promise(resolve => setTimeout(resolve, 1_000))
      expect(await held()).toBe(before)
      expect((await plan(id))?.nodes[0].attempts[0].ballots.length).toBe(2)

      // Notes typed, Choose clicked: the item says sent and goes, and the split is applied with the person's ballot.
      await split.locator('textarea[data-field="notes"]').fill('good: small steps')
      await card.locator('button[data-action="choose"]').click()
      // Under load the split can be applied, and its item leave the panel, before the page has the answer to its
      // request: then there is no "sent" to see, and the ballot below is what shows it was sent.
      const sent = await waitUntil(
        'the item to say sent, or to go with the split applied',
        async () =>
          (await said(root.nodes[0].id as string)) ??
          (((await plan(id))?.nodes.length ?? 0) > 1 ? 'applied' : undefined),
        UI_MS,
        100
      )
      if (sent !== 'applied') expect(sent).toMatch(/^sent: chose P1/)
      await split.waitFor({ state: 'detached', timeout: UI_MS })
      const applied = await waitUntil(
        'the split to be applied',
        async () => {
          const t = await plan(id)
          return (t?.nodes.length ?? 0) > 1 ? t : undefined
        },
        UI_MS
      )
      const attempt = applied?.nodes[0].attempts[0] as Structured
      expect(attempt.winner).toBe(proposal)
      expect(attempt.ballots.find((b: Structured) => b.author === observer.peerId)?.notes).toBe('good: small steps')

      // Each result waits for the person's review: Accept each, with notes on the first.
      const accepted: string[] = []
      await waitUntil(
        "the plan to complete under the person's reviews",
        async () => {
          if ((await plan(id))?.status === 'completed') return true
          const tasks = await item(page, id, 'review').evaluateAll(es =>
            es.map(e => e.getAttribute('data-task') as string)
          )
          const task = tasks.find(t => !accepted.includes(t))
          if (task === undefined) return undefined
          const next = page.locator(`#awaiting-list li.await-item[data-task="${task}"]`)
          expect(((await next.locator('pre.await-result').textContent()) ?? '').length).toBeGreaterThan(0)
          if (accepted.length === 0) await next.locator('textarea[data-field="notes"]').fill('clear enough to act on')
          await next.locator('button[data-action="accept"]').click()
          // Counted once clicked: under load the item can leave before a wait below sees it, and the retry must not click it again.
          accepted.push(task)
          // As with the split: the task may be done, and its item gone, before the page has its answer.
          const sent = await waitUntil(
            'the review to say sent, or its task to be done',
            async () =>
              (await said(task)) ??
              ((await plan(id))?.tasks.find((t: Structured) => t.id === task)?.status === 'done' ? 'done' : undefined),
            UI_MS,
            100
          )
          if (sent !== 'done') expect(sent).toBe('sent: accepted')
          await next.waitFor({ state: 'detached', timeout: UI_MS })
          return undefined
        },
        PLAN_MS,
        250
      )
      const done = (await plan(id)) as Structured
      expect(done.tasks.length).toBe(3)
      expect([...accepted].sort()).toEqual(done.tasks.map((t: Structured) => t.id).sort())
      expect(done.tasks.every((t: Structured) => t.status === 'done')).toBe(true)
      const events = (await (await fetch(`${observer.http}/plans/${id}/events`)).json()) as Structured[]
      const mine = events.filter(e => e.type === 'result-reviewed' && e.author === observer.peerId)
      expect(mine.map(e => e.body.verdict)).toEqual(['accept', 'accept', 'accept'])
      expect(mine.map(e => e.body.notes)).toContain('clear enough to act on')
      await waitUntil(
        'the panel to empty',
        async () => ((await page.locator('#awaiting-list .awaiting-none').count()) === 1 ? true : undefined),
        UI_MS,
        250
      )
      await page.close()
      expect(pageErrors).toEqual([])
    },
    2 * PLAN_MS
  )
})
