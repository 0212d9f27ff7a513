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
