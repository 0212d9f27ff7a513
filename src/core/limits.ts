/**
 * Size caps. The wire rejects anything beyond them, so the fold, the store and
 * every prompt can rely on bounded inputs.
 */

/** One encoded event on the wire (envelope plus signature). */
export const MAX_EVENT_BYTES = 64 * 1024
export const MAX_SWARM_NAME_CHARS = 64
export const MAX_GOAL_CHARS = 4_000
export const MAX_TITLE_CHARS = 200
export const MAX_DETAIL_CHARS = 2_000
export const MAX_RATIONALE_CHARS = 4_000
export const MAX_NOTES_CHARS = 4_000
/** A result's output: 20k UTF-16 units is at most 60 KB of UTF-8, so the event still fits MAX_EVENT_BYTES. */
export const MAX_OUTPUT_CHARS = 20_000
export const MAX_REASON_CHARS = 1_000
export const MAX_MODEL_CHARS = 100
export const MAX_DEPS = 64
export const MAX_COMMITTEE = 32
export const MIN_SUBGOALS = 2
export const MAX_SUBGOALS = 7
export const MAX_SCORE = 100
/** Bounds on plan parameters, so a goal cannot ask for an unbounded tree. */
export const MAX_DEPTH_LIMIT = 6
export const MAX_NODES_LIMIT = 5_000
export const MAX_ATTEMPTS_LIMIT = 10
export const MIN_LEASE_MS = 1_000
export const MAX_LEASE_MS = 3_600_000
export const MAX_CLAIM_MS_LIMIT = 86_400_000
/** Token counts stay far below 2^53 even summed over 100k events, so sums are exact in any order. */
export const MAX_TOKENS_LIMIT = 10_000_000_000
export const MAX_CLAIMS_PER_EXECUTOR_LIMIT = 100
/** Protocol 4: the most whole days a goal may ask its plan to be kept once finished (ten years). */
export const MAX_RETAIN_DAYS = 3_650
/** Protocol 5: the widest claim window (`trust.claimWindowMs`); it is also at most the plan's leaseMs. */
export const MAX_CLAIM_WINDOW_MS = 60_000
/** Protocol 5: the sparsest review sample (`trust.reviewOneIn`): one result in this many. */
export const MAX_REVIEW_ONE_IN = 1_000
/** Events stamped further ahead of local wall time than this wait (parked) until the clock catches up. */
export const MAX_CLOCK_AHEAD_MS = 10_000

/** Protocol 3: what one subgoal may say it needs (capability tags, servers or `server/tool` names). */
export const MAX_NEEDS = 4
export const MAX_NEED_CHARS = 56
/** A need, and a capability an executor offers: a name, or a server's name and one of its tools. */
export const NEED_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/
/** Protocol 3: tool calls one result records; a loop that made more records the first ones. */
export const MAX_TOOL_RECORDS = 24
export const MAX_TOOL_NAME_CHARS = 64
/** A tool call's arguments are recorded only when their JSON is at most this long. */
export const MAX_TOOL_ARGS_CHARS = 100
export const MAX_TOOL_ERROR_CHARS = 100
/** A tool call's recorded duration is at most a day. */
export const MAX_TOOL_MS = 86_400_000
/** Protocol 3: model turns one result or failure may report (and count maxTokensPerCall for each). */
export const MAX_TURNS = 100
