import { defineConfig } from 'vitest/config'

/** Where a test file needs a fresh process: the tiers that start nodes, sockets and processes, or fold whole swarms. */
const ISOLATED = ['test/{contract,sim,integration,resilience,e2e}/**/*.test.ts']
/**
 * The in-process tiers, whose files may share a worker process with the files before them (see `projects` below),
 * but for these: test/unit/run-node-lazy.test.ts checks which modules a node loads, so it needs a fresh module graph;
 * test/unit/swarm-yamux.test.ts counts the data frames of 200 sends a macrotask apart, which a warm process (its
 * modules loaded and compiled by an earlier file) sends so fast that yamux puts them in 3 frames, not 10 or more.
 */
const SHARED = ['test/unit/**/*.test.ts', 'test/property/**/*.test.ts']
const NEEDS_ITS_OWN_PROCESS = ['test/unit/run-node-lazy.test.ts', 'test/unit/swarm-yamux.test.ts']

export default defineConfig({
  test: {
    setupFiles: ['./src/polyfill.ts'],
    // The CLI bundle, built once before any file runs (skipped when dist/ is
    // fresh): the tests spawn it rather than the sources through tsx.
    globalSetup: ['./test/helpers/build-cli.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default on a 2-core machine is one worker: every file in turn.
    // Most end-to-end files spend their time waiting (leases, model delays,
    // gossip), so two files at a time nearly halve the suite's wall time.
    // Three at a time was faster still (six process files: 125 s against
    // 170 s), but in two whole runs timing-bound tests (a lease takeover, an
    // A2A cancel, a hostile peer's rejection counts) failed that pass alone.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'isolated', include: [...ISOLATED, ...NEEDS_ITS_OWN_PROCESS] } },
      // A fresh process per file costs test/unit and test/property more than their tests: starting a fork and
      // importing the sources again took 28 s of 191 s, and the run (92 files, two at a time) 130 s of wall time and
      // 100 s of CPU; these files in reused processes took 97 s and 70 s, with the same tests passing. Their tests
      // start no nodes, timers or processes that outlive them, and change no global state another file reads.
      // test/integration stays isolated: shared, its 38 files took 70 s rather than 108 s (59 s of CPU rather than
      // 86 s), but a session that sync-scoped counts as small sent 332 bytes, not under 200, in 1 of 2 runs.
      {
        extends: true,
        test: { name: 'shared', include: SHARED, exclude: NEEDS_ITS_OWN_PROCESS, isolate: false }
      }
    ]
  }
})
