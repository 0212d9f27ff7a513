import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    setupFiles: ['./src/polyfill.ts'],
    // The CLI bundle, built once before any file runs (skipped when dist/ is
    // fresh): the tests spawn it rather than the sources through tsx.
    globalSetup: ['./test/helpers/build-cli.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default on a 2-core machine is one worker: every file in turn.
    // Most end-to-end files spend their time waiting (leases, model delays,
    // gossip), so two files at a time nearly halve the suite's wall time.
    // Three at a time was faster still (six process files: 125 s against
    // 170 s), but in two whole runs timing-bound tests (a lease takeover, an
    // A2A cancel, a hostile peer's rejection counts) failed that pass alone.
    maxWorkers: 2
  }
})
