/**
 * A real browser for the dashboard tests: playwright-core driving Debian's
 * chromium (`apt-get install -y chromium`; .ci/run installs it), headless,
 * with an empty profile and nothing that phones home. Tests skip, saying
 * so, when /usr/bin/chromium is missing.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import type { BrowserContext } from 'playwright-core'
import { startHttpServer } from '../../src/http/server.js'
import { createDashboard } from '../../src/http/dashboard/routes.js'
import type { DashboardSource } from '../../src/http/dashboard/state.js'

export const CHROMIUM = process.env.PLAN_SWARM_TEST_CHROMIUM ?? '/usr/bin/chromium'
export const HAS_CHROMIUM = existsSync(CHROMIUM)
export const NO_CHROMIUM_MESSAGE = `skipping the browser tests: ${CHROMIUM} not found (install it: apt-get install -y chromium; CI does)`

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync'
]

export interface TestBrowser {
  readonly context: BrowserContext
  close: () => Promise<void>
}

/** A fresh browser with an empty user-data-dir (removed on close). */
export async function launchBrowser(opts: { viewport?: { width: number; height: number } } = {}): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'plan-swarm-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: opts.viewport ?? { width: 1280, height: 900 },
    timeout: 120_000
  })
  return {
    context,
    close: async () => {
      await context.close().catch(() => undefined)
      rmSync(profile, { recursive: true, force: true })
    }
  }
}

/**
 * The dashboard over `source`, served on a loopback port, and a browser to open it in (a test of the page alone,
 * without a node). `stop` closes the browser, the dashboard's stream and the server.
 */
export async function dashboardInBrowser(
  source: DashboardSource
): Promise<{ url: string; browser: TestBrowser; stop: () => Promise<void> }> {
  const server = await startHttpServer('127.0.0.1', 0, { status: () => ({}), replica: {}, metrics: {} } as never)
  const d = createDashboard(source)
  server.mount(d.route)
  const browser = await launchBrowser()
  return {
    url: server.url,
    browser,
    stop: async () => {
      await browser.close()
      d.close()
      await server.close()
    }
  }
}
