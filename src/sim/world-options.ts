import type { FaultKind } from './faults.js'
import type { LatencySpec } from './latency.js'
import type { SimTopology } from './network.js'
import type { SimRole } from './swarm-shape.js'
import type { TraceSample } from './swarm-sampler.js'
import type { EventStore } from '../ports/event-store.js'
import type { Dishonesty } from './byzantine/hooks.js'

/** What a World runs: one seed, and everything else a run may vary (each with its default). */
export interface WorldOptions {
  readonly seed: number
  /** Nodes in all, the goal's author (a client) included. */
  readonly nodes: number
  readonly faults: readonly FaultKind[]
  /** Virtual ms the model takes for one call. Default 300. */
  readonly llmLatencyMs?: number
  /**
   * The model's latency as a distribution (`--llm-ms`, src/sim/latency.ts):
   * a call's latency drawn from the seed and the call's identity. Takes the
   * place of llmLatencyMs when given.
   */
  readonly llmLatency?: LatencySpec
  /**
   * One-way delay of every message on every link, uniform in [minMs, maxMs)
   * (`--link-ms 20-80`); default the quiet CLEAN_LINKS (2-5 ms). Faults on
   * links replace it while they last.
   */
  readonly linkMs?: { readonly minMs: number; readonly maxMs: number }
  /**
   * Goals submitted at once (default 1): plan k by node k mod n, so that no
   * author holds more than the open-plan limit per author with n >= 5 at 100
   * plans. Each plan a goal of its own text.
   */
  readonly plans?: number
  /** Virtual ms at which the goals are submitted (default 1,500). */
  readonly goalAtMs?: number
  /** Keep what the critical path and the central scheduler need (World.record): events, fold times, calls. */
  readonly record?: boolean
  /** The plan's depth (default 2: a root, its subgoals, their leaves). */
  readonly maxDepth?: number
  /** Links per node in the fixed topology (default 6). */
  readonly degree?: number
  /**
   * `neighbours` (default): connections opened and closed by each node's
   * real dial policy (src/net/neighbours.ts) from the presence it hears,
   * starting from its bootstrap peers. `fixed`: a fixed random graph of
   * `degree` links a node (a ring plus random chords, no dialing), which
   * replays seeds recorded on it as they ran (ADR-0022).
   */
  readonly topology?: SimTopology
  /** `--max-peers` of every node (neighbours topology; default DEFAULT_MAX_PEERS). */
  readonly maxPeers?: number
  /**
   * When a run ends, once its faults are over and the plan has finished on
   * every node with one treeHash (neighbours topology; the fixed graph always
   * ends there). `rosters`: not before every live roster lists every live
   * node, or the roster bound (`rosterBoundMs`) has passed, when the roster
   * check fails. `plan`: there and then, with how full the rosters were
   * (`rosterFill`); the roster check then holds the run to its bound only if
   * the rosters filled by the end or the bound had passed. Default:
   * `rosters` up to ROSTER_WAIT_MAX_NODES nodes, `plan` beyond, where rosters
   * fill only with the periodic announcements one presence interval (n / 2 s)
   * after the start and waiting for them costs minutes to hours of wall time.
   */
  readonly until?: SimHorizon
  /** How soon every roster must be full (default rosterFullBoundMs(nodes)); a test sets an impossible one to see the check fail. */
  readonly rosterBoundMs?: number
  /** Give up after this much virtual time (default 15 min). */
  readonly deadlineMs?: number
  /** The plan asks for review of every result by the committee (default false). */
  readonly review?: boolean
  /**
   * Every goal is a protocol-5 plan (`params.trust` = DEFAULT_TRUST, ADR-0047; `npm run sim -- --trust`): claims
   * ranked by a hash within the claim window, results only from the holder, the past final. Default false: the
   * goals fold by the rules of versions 1-4, as before. The review sample (`trust.reviewOneIn`) is off unless
   * `reviewOneIn` is given.
   */
  readonly trust?: boolean
  /**
   * Every node runs with an allow-list of the run's own keys (`--allow-peers`): events by any other author are
   * refused at ingest (src/runtime/ingest-verdicts.ts), as a sybil's extra identities are behind a real allow-list.
   */
  readonly allowList?: boolean
  /** With `trust`: the goals' `trust.reviewOneIn` (docs/protocol/fold.md 11.7); default absent, no sample. */
  readonly reviewOneIn?: number
  /** Faults run from 2 s for this long (default 20 s); pauses, crashes and partitions last up to half of it. */
  readonly faultSpanMs?: number
  /** Where the roles' lines go (default: nowhere); with the virtual time in ms. */
  readonly say?: (node: number, role: SimRole, atMs: number, line: string) => void
  /** Run without sync sessions: gossip alone, as a canary that the checks catch what sync repairs. */
  readonly withoutSync?: boolean
  /**
   * Told once a virtual second what the swarm looks like (`npm run sim --
   * --trace`): a debug view of where a run spends its time. On the
   * neighbours topology it rides on the connection sampler, so the run is
   * the same with it or without; on the fixed graph it adds a timer.
   */
  readonly trace?: (s: TraceSample) => void
  /**
   * Nodes beyond `nodes` (executors) that `run` does not start: a long run
   * (src/sim/long-run/) starts them later, on empty stores, as newcomers.
   */
  readonly joins?: number
  /** Wraps each node's memory store (a long run watches what goes in and what expires). */
  readonly wrapStore?: (index: number, store: EventStore) => EventStore
  /** Dishonest members and Twins (src/sim/byzantine/): roles replaced, extra nodes under another's key. */
  readonly dishonest?: Dishonesty
}

/** What a run waits for beyond the plan (WorldOptions.until). */
export type SimHorizon = 'plan' | 'rosters'
