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
    // gossip), and since they run the CLI bundle a process costs a fraction
    // of the CPU it did: on 2 cores, six process files took 170 s two at a
    // time and 125 s three at a time, with the same CPU and each file as long.
    maxWorkers: 3
  }
})
