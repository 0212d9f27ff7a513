/**
 * The observer's dashboard in a real browser (playwright-core driving
 * Debian's chromium), against a local swarm of real processes (an observer
 * with --allow-submit as the seed, a decomposer, a scorer, an executor, and a
 * second, read-only observer; --no-mdns, offline provider):
 *   - the read-only page loads, shows no submit or cancel controls, and its
 *     POST endpoints refuse (403): that observer publishes nothing;
 *   - with --allow-submit and the printed token, a goal submitted from the
 *     page appears as a tree that grows while the plan runs, to the
 *     deliverable; a result opens in place (from the keyboard); a page opened
 *     mid-plan on the other observer shows the same plan; a screenshot is
 *     saved to test-results/dashboard.png (to docs/screenshot-dashboard.png,
 *     the one docs/dashboard.md shows, with UPDATE_SCREENSHOT=1);
 *   - cancel from the page works for a plan this observer authored;
 *   - a foreign Origin or a wrong token is refused;
 *   - the page reconnects by itself when its observer restarts;
 *   - nothing is fetched from anywhere but the node, and the page fits a
 *     phone's width.
 * Skipped, saying so, when /usr/bin/chromium is missing (CI installs it).
 */
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, cliEnv, removeTempDirs, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { HAS_CHROMIUM, NO_CHROMIUM_MESSAGE, launchBrowser } from '../helpers/browser.js'
import type { Page } from 'playwright-core'
import type { CliChild } from '../helpers/cli-process.js'
import type { TestBrowser } from '../helpers/browser.js'

const SWARM = 'dashboard-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
/** A whole plan, offline, on a busy 2-core machine. */
const PLAN_MS = 400_000
const UI_MS = 60_000
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOT === '1'
    ? join(REPO_ROOT, 'docs', 'screenshot-dashboard.png')
    : join(REPO_ROOT, 'test-results', 'dashboard.png')

if (!HAS_CHROMIUM) console.warn(NO_CHROMIUM_MESSAGE)

interface Started {
  http: string
  dashboard: string
  submitToken?: string
  addresses: string[]
  peerId: string
}

describe.skipIf(!HAS_CHROMIUM)('the observer dashboard in a browser', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let writer: Started
  let reader: Started
  let readerNode: CliChild
  let browser: TestBrowser
  let plan = ''
  const nodes: CliChild[] = []
  const requests: string[] = []
  const pageErrors: string[] = []

  const startObserver = async (name: string, extra: string[]): Promise<{ child: CliChild; started: Started }> => {
    const child = spawnCli(['--role', 'observer', ...COMMON, '--data-dir', join(home, name), '--json', ...extra], {
      env,
      name
    })
    const started = (await child.waitForJson(o => o.event === 'started', START_MS)) as unknown as Started
    return { child, started }
  }

  /** Waits until the element's text matches (playwright-core has no expect of its own). */
  const waitText = async (page: Page, selector: string, re: RegExp, timeoutMs = UI_MS): Promise<string> =>
    await waitUntil(
      `${selector} to match ${String(re)}`,
      async () => {
        const t = await page
          .locator(selector)
          .first()
          .textContent({ timeout: 1_000 })
          .catch(() => null)
        return t !== null && re.test(t) ? t : undefined
      },
      timeoutMs,
      200
    )

  const openPage = async (url: string): Promise<Page> => {
    const page = await browser.context.newPage()
    page.on('request', r => {
      requests.push(r.url())
    })
    page.on('pageerror', e => {
      pageErrors.push(e.message)
    })
    await page.goto(url)
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: UI_MS })
    return page
  }

  beforeAll(async () => {
    home = tempDir('dashboard')
    env = cliEnv(home)
    const w = await startObserver('observer-writer', ['--http', '127.0.0.1:0', '--allow-submit'])
    nodes.push(w.child)
    writer = w.started
    const seed = writer.addresses[0] as string
    for (const role of ['decomposer', 'scorer', 'executor']) {
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], {
          env,
          name: role
        })
      )
    }
    const r = await startObserver('observer-reader', ['--http', '127.0.0.1:0', '--bootstrap', seed])
    readerNode = r.child
    reader = r.started
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
    await waitUntil(
      'the writing observer to see every role',
      async () => {
        const s = (await (await fetch(`${writer.http}/status`)).json()) as { roster: Array<{ role: string }> }
        const roles = new Set(s.roster.map(x => x.role))
        return ['decomposer', 'scorer', 'executor'].every(x => roles.has(x)) ? true : undefined
      },
      START_MS
    )
    browser = await launchBrowser()
  }, 3 * START_MS)

  afterAll(async () => {
    await browser?.close()
    await stopCliChildren()
    removeTempDirs()
  }, 60_000)

  it('prints the dashboard and a submit token only with --allow-submit', () => {
    expect(writer.dashboard).toBe(`${writer.http}/`)
    expect(writer.submitToken).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(reader.dashboard).toBe(`${reader.http}/`)
    expect(reader.submitToken).toBeUndefined()
  })

  it(
    'read-only: the page loads and shows no submit or cancel controls; its POST endpoints refuse',
    async () => {
      const page = await openPage(reader.dashboard)
      await waitText(page, '#whoami', /read-only/)
      expect(await page.locator('#submit').isVisible()).toBe(false)
      expect(await page.locator('#cancel-plan').count()).toBe(0)
      for (const path of ['/api/goals', `/api/plans/${'0'.repeat(64)}/cancel`]) {
        const res = await fetch(`${reader.http}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-plan-swarm-token': writer.submitToken ?? '' },
          body: '{"goal":"x"}'
        })
        expect(res.status).toBe(403)
        expect(((await res.json()) as { error: string }).error).toMatch(/read-only.*--allow-submit/)
      }
      await page.close()
    },
    2 * UI_MS
  )

  it('refuses a foreign Origin, a missing or wrong token, and bad input, with JSON errors', async () => {
    const post = async (
      headers: Record<string, string>,
      body = '{"goal":"plan a picnic"}'
    ): Promise<{ status: number; error: string }> => {
      const res = await fetch(`${writer.http}/api/goals`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body
      })
      return { status: res.status, error: ((await res.json()) as { error: string }).error }
    }
    const token = writer.submitToken as string
    expect(await post({ origin: 'http://evil.example', 'x-plan-swarm-token': token })).toMatchObject({
      status: 403,
      error: expect.stringMatching(/cross-origin/)
    })
    expect(await post({})).toMatchObject({ status: 401, error: expect.stringMatching(/missing token/) })
    expect(await post({ 'x-plan-swarm-token': 'x'.repeat(32) })).toMatchObject({
      status: 401,
      error: expect.stringMatching(/wrong token/)
    })
    expect(await post({ 'x-plan-swarm-token': token }, '{"goal": ')).toMatchObject({
      status: 400,
      error: expect.stringMatching(/not JSON/)
    })
    expect(await post({ 'x-plan-swarm-token': token }, '{"goal":"x","options":{"max-depth":99}}')).toMatchObject({
      status: 400,
      error: expect.stringMatching(/maxDepth|max-depth/i)
    })
  })

  it(
    'with --allow-submit: a goal submitted from the page grows into a tree, live, to its deliverable; a result opens in place',
    async () => {
      const page = await openPage(`${writer.dashboard}#token=${writer.submitToken ?? ''}`)
      // The token went from the address bar into this tab's storage.
      expect(page.url()).not.toContain('token=')
      await waitText(page, '#whoami', /may submit/)
      await page.locator('#goal').fill('plan a weekend in Lisbon')
      await page.locator('details.options > summary').click()
      await page.locator('#opt-max-depth').fill('1')
      // Every state of the tree the page draws, recorded in the page itself, so that a busy test
      // process cannot miss one: the tree must be seen changing, not only finished.
      await page.evaluate(() => {
        const w = window as unknown as { seenTrees: string[] }
        w.seenTrees = []
        const tree = document.getElementById('tree') as HTMLElement
        new MutationObserver(() => {
          const statuses = Array.from(tree.querySelectorAll('li[data-node]'))
            .map(e => e.getAttribute('data-status'))
            .join(',')
          if (statuses !== '' && w.seenTrees[w.seenTrees.length - 1] !== statuses) w.seenTrees.push(statuses)
        }).observe(tree, { childList: true, subtree: true })
      })
      await page.locator('#submit-button').click()
      await page.locator('#submit-msg[data-kind="ok"]').waitFor({ timeout: UI_MS })
      const said = (await page.locator('#submit-msg').textContent()) ?? ''
      expect(said).toMatch(/submitted plan/)
      plan = decodeURIComponent(/plan=([0-9a-f]{64})/.exec(page.url())?.[1] ?? '')
      expect(plan).toMatch(/^[0-9a-f]{64}$/)

      // The root appears, then the tree grows (the split is accepted, children show up) while the plan runs.
      await page.locator('#tree li[data-node]').first().waitFor({ timeout: UI_MS })
      await waitText(page, '#plan-goal', /^plan a weekend in Lisbon$/)
      await waitUntil(
        'the tree to grow past the root',
        async () => ((await page.locator('#tree li[data-node]').count()) > 1 ? true : undefined),
        PLAN_MS,
        250
      )

      // A page opened mid-plan, on the other observer, shows the plan so far.
      const late = await openPage(`${reader.dashboard}#plan=${plan}`)
      await late.locator('#tree li[data-node]').first().waitFor({ timeout: UI_MS })
      await waitText(late, '#plan-goal', /^plan a weekend in Lisbon$/)

      await waitUntil(
        'the plan to complete on the page',
        async () =>
          (await page.locator('#plan-head .badge').first().textContent()) === 'completed' ? true : undefined,
        PLAN_MS,
        250
      )
      // It was seen moving: several states, the first with work still to do.
      const seen = await page.evaluate(() => (window as unknown as { seenTrees: string[] }).seenTrees)
      expect(seen.length, seen.join('\n')).toBeGreaterThan(1)
      expect(
        (seen[0] as string).split(',').some(s => s !== 'done'),
        seen.join('\n')
      ).toBe(true)
      await waitText(page, '#deliverable-text', /\S/)
      expect(await page.locator('details[data-key^="prop:"]').count()).toBeGreaterThan(0)

      // A leaf's result opens from the keyboard: focus its summary, press Enter.
      const result = page.locator('#tree li[data-node] li[data-node] details[data-key^="res:"]').first()
      await result.locator('summary').focus()
      await page.keyboard.press('Enter')
      await result.locator('pre.output').waitFor({ state: 'visible', timeout: UI_MS })
      expect(((await result.locator('pre.output').textContent()) ?? '').length).toBeGreaterThan(0)

      // Same tree on both observers.
      await waitUntil(
        'the late page to show the completed plan',
        async () =>
          (await late.locator('#plan-head .badge').first().textContent()) === 'completed' ? true : undefined,
        UI_MS,
        250
      )
      await late.close()

      mkdirSync(dirname(SCREENSHOT), { recursive: true })
      await page.screenshot({ path: SCREENSHOT, fullPage: false })
      console.log(`dashboard screenshot: ${SCREENSHOT}`)

      // A phone's width: nothing wider than the screen.
      await page.setViewportSize({ width: 390, height: 844 })
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      expect(overflow).toBeLessThanOrEqual(1)
      await page.close()
    },
    PLAN_MS + 4 * UI_MS
  )

  it(
    'cancels, from the page, a plan this observer submitted',
    async () => {
      // A committee nobody in the swarm belongs to: the plan waits for ballots, so the cancel cannot lose a race.
      const absent = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      // The token lives in one tab's storage: a new tab gets it from the link again.
      const page = await openPage(`${writer.dashboard}#token=${writer.submitToken ?? ''}`)
      await page.locator('#goal').fill('plan a picnic')
      await page.locator('details.options > summary').click()
      await page.locator('#opt-committee').fill(absent)
      await page.locator('#submit-button').click()
      await page.locator('#submit-msg[data-kind="ok"]').waitFor({ timeout: UI_MS })
      await waitText(page, '#plan-goal', /^plan a picnic$/)
      await page.locator('#cancel-plan').click()
      await page.locator('#cancel-reason').fill('changed my mind')
      await page.locator('#cancel-confirm').click()
      await waitUntil(
        'the page to show the plan cancelled',
        async () =>
          (await page.locator('#plan-head .badge').first().textContent()) === 'cancelled' ? true : undefined,
        UI_MS,
        250
      )
      await waitText(page, '#plan-reason', /changed my mind/)
      expect(await page.locator('#cancel-plan').count()).toBe(0)
      await page.close()
    },
    3 * UI_MS
  )

  it(
    'the page reconnects by itself when its observer restarts, and shows everything again',
    async () => {
      const page = await openPage(`${reader.dashboard}#plan=${plan}`)
      await page.locator('#tree li[data-node]').first().waitFor({ timeout: UI_MS })
      const port = new URL(reader.http).port
      await readerNode.stop()
      await page.locator('#conn[data-state="reconnecting"]').waitFor({ timeout: UI_MS })
      const again = await startObserver('observer-reader', [
        '--http',
        `127.0.0.1:${port}`,
        '--bootstrap',
        writer.addresses[0] as string
      ])
      readerNode = again.child
      await page.locator('#conn[data-state="live"]').waitFor({ timeout: START_MS })
      await waitText(page, '#plan-goal', /^plan a weekend in Lisbon$/)
      await page.close()
    },
    2 * START_MS
  )

  it("fetched nothing but the nodes' own pages, without script errors", () => {
    const origins = new Set([new URL(writer.http).origin, new URL(reader.http).origin])
    const foreign = requests.filter(u => !origins.has(new URL(u).origin))
    expect(foreign).toEqual([])
    expect(requests.length).toBeGreaterThan(0)
    expect(pageErrors).toEqual([])
  })
})
