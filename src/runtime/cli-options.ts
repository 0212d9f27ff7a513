/**
 * The command line's tables: the commands, the options of a node and of the
 * author commands, and the exit codes. `--help` (help-text.ts), the parser
 * (config.ts) and docs/cli.md (`npm run docs:cli`) all read them, so none of
 * them can name an option or a command that does not exist.
 */
export const ROLES = ['decomposer', 'scorer', 'executor', 'observer'] as const
/** A node's role; 'client' is the short-lived peer of submit, cancel and the other author commands. */
export type Role = (typeof ROLES)[number] | 'client'

/**
 * Every command besides running a node (`--role`), as `npm start -- <usage>`: the source of `--help`,
 * of the unknown-command error and of docs/cli.md, so none of them can name a command that does not exist.
 */
export const COMMANDS = [
  { name: 'submit', usage: 'submit "<goal>" [--wait] [plan options]', help: 'publish a goal (prints the plan id)' },
  { name: 'cancel', usage: 'cancel <plan-id> [--reason TEXT]', help: "cancel a plan, as the goal's author" },
  {
    name: 'amend',
    usage: 'amend <plan-id> --committee ID,... [--quorum N]',
    help: "change a plan's committee, as its author"
  },
  {
    name: 'raise-budget',
    usage: 'raise-budget <plan-id> --budget N',
    help: "raise a plan's token budget, as its author"
  },
  { name: 'retry', usage: 'retry <plan-id> <task-id>', help: "run a failed task again, as the plan's author" },
  {
    name: 'export',
    usage: 'export <plan-id> --markdown [FILE] | --json',
    help: 'write a plan and its deliverable out'
  },
  { name: 'mcp', usage: 'mcp [options]', help: 'an MCP server on stdio, with a swarm node of its own (role client)' },
  {
    name: 'task',
    usage: 'task next [--plan ID] | done <task-id> --file FILE | release <task-id>',
    help: 'do a task yourself (plans with --executors outside|any)'
  },
  { name: 'id', usage: 'id', help: "this key's peer id, for another author's --committee or --approver" },
  { name: 'inbox', usage: 'inbox', help: 'splits and results that wait for this key' },
  {
    name: 'vote',
    usage: 'vote <plan-id> <node-id> --choose P1|none [--notes TEXT]',
    help: "cast a person's ballot on a split"
  },
  {
    name: 'review',
    usage: 'review <plan-id> <task-id> --accept|--reject [--notes TEXT]',
    help: 'accept or reject a result'
  },
  {
    name: 'import',
    usage: 'import <archive.jsonl> --data-dir DIR',
    help: "put an expired plan's archive back into a stopped node's store, checking every event"
  },
  { name: 'keygen', usage: 'keygen [FILE]', help: 'write a new pre-shared swarm key to FILE (or stdout)' }
] as const

export type CommandName = (typeof COMMANDS)[number]['name']

/** Every long option, its kind, and what it is for (also the source of `--help`). */
export const OPTIONS = {
  role: { type: 'string', help: 'decomposer | scorer | executor | observer' },
  swarm: { type: 'string', help: 'swarm name; peers only talk within one swarm (default "default")' },
  listen: { type: 'string', multiple: true, help: 'multiaddr to listen on (repeatable; default /ip4/0.0.0.0/tcp/0)' },
  bootstrap: { type: 'string', multiple: true, help: 'multiaddr of a peer to dial and keep redialing (repeatable)' },
  'no-mdns': { type: 'boolean', help: 'do not discover peers by mDNS on the LAN' },
  announce: {
    type: 'string',
    multiple: true,
    help:
      'public multiaddr to announce instead of the ones found (repeatable; env comma-separated), ' +
      'e.g. /ip4/203.0.113.7/tcp/4001 on a VM or behind a port forward'
  },
  relay: {
    type: 'boolean',
    help: 'serve circuit relay v2 to swarm members behind NAT (run it on a node others can dial)'
  },
  upnp: { type: 'boolean', help: 'ask the router for a port forward by UPnP (IGD)' },
  websockets: {
    type: 'boolean',
    help: 'also dial (and, with a /ws --listen address, accept) WebSockets, for networks that let only HTTP-like traffic out'
  },
  'swarm-key': { type: 'string', help: 'pre-shared key file (from `keygen`): only peers with the same key connect' },
  'allow-peers': { type: 'string', help: 'file of peer ids (one per line): only these peers may connect' },
  'max-peers': {
    type: 'string',
    help: 'connections this node keeps at most (default 24); the gossip mesh reaches everyone else'
  },
  'data-dir': {
    type: 'string',
    help: 'where events and the identity key live (default: lowest free ~/.plan-swarm/<swarm>/<role>-<n>)'
  },
  http: {
    type: 'string',
    help: "HOST:PORT for /status, /standing, /plans/<id>, /metrics, and the observer's live dashboard at / (e.g. 127.0.0.1:7070)"
  },
  'mcp-http': {
    type: 'string',
    help: 'HOST:PORT for an MCP server over Streamable HTTP on this node (at /mcp; needs the bearer token it prints)'
  },
  a2a: {
    type: 'string',
    help:
      'HOST:PORT for an A2A (Agent2Agent v1.0) server on this node: JSON-RPC at /a2a, its Agent Card at ' +
      '/.well-known/agent-card.json (needs the bearer token it prints)'
  },
  'a2a-agent': {
    type: 'string',
    help:
      'executor: URL of an A2A agent (its Agent Card, or the base URL that serves /.well-known/agent-card.json) ' +
      'that does every task this executor takes'
  },
  'worker-silence-s': {
    type: 'string',
    help:
      "MCP, `task` and --a2a-agent: stop renewing an outside worker's lease after it is silent this many seconds " +
      '(default 600)'
  },
  'allow-submit': {
    type: 'boolean',
    help:
      "observer: let the dashboard submit goals, cancel plans, vote and review (signed with this observer's key; " +
      'needs the token it prints)'
  },
  tools: {
    type: 'string',
    help: 'executor: an MCP client config (mcpServers, as Claude Desktop reads it) of the tools it offers to plans'
  },
  'max-steps': { type: 'string', help: 'executor with --tools: model turns per task before it fails (default 20)' },
  'tool-timeout-s': { type: 'string', help: 'executor with --tools: seconds one tool call may take (default 60)' },
  'tool-result-bytes': {
    type: 'string',
    help: 'executor with --tools: bytes of one tool result the model sees; the rest is cut, saying so (default 16384)'
  },
  'goals-per-minute': {
    type: 'string',
    help: 'goals this node takes from its dashboard, MCP and A2A in any minute (default 60; 0: no limit); more are refused'
  },
  'keep-archives': {
    type: 'string',
    help:
      'days this node keeps the archive of each expired plan in <data-dir>/archive (default 30; 0: none; forever: ' +
      "every one). Expiry itself follows each goal's retain-days on every node"
  },
  history: {
    type: 'string',
    help:
      'all (default): fetch the whole history from peers; open: keep only the plans under way and those seen ' +
      'finishing here, never fetching finished plans (for a node that joins a swarm with a long history)'
  },
  'open-plans-per-author': {
    type: 'string',
    help:
      "plans one author may have under way (default 20; 0: no limit): a goal beyond them waits for the author's " +
      'earlier plans to finish. Give every node the same value'
  },
  provider: {
    type: 'string',
    help: 'anthropic | openai | offline (default: anthropic when ANTHROPIC_API_KEY is set, else offline)'
  },
  model: { type: 'string', help: 'model name for the provider' },
  'cheap-model': { type: 'string', help: 'cheaper model used when a plan has less than 20% of its budget left' },
  otlp: {
    type: 'string',
    help: 'OTLP/HTTP endpoint to export trace spans to, e.g. http://127.0.0.1:4318 (also OTEL_EXPORTER_OTLP_ENDPOINT); off when unset'
  },
  'base-url': { type: 'string', help: 'provider base URL (Ollama, llama.cpp, a proxy)' },
  json: { type: 'boolean', help: 'print JSON lines instead of text' },
  once: { type: 'boolean', help: 'observer: print the trees once (after catching up) and exit' },
  markdown: { type: 'string', help: 'observer: write finished plans as Markdown to this file' },
  expand: {
    type: 'boolean',
    help: "observer: print every node; by default a big plan's finished and quiet subtrees print as one line of counts"
  },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
  version: { type: 'boolean', help: 'print the release (from package.json) and exit' }
} as const

/** Options of `submit`, `cancel`, `amend`, `raise-budget` and `retry`: the plan parameters and how to follow a plan. */
export const CLIENT_OPTIONS = {
  wait: { type: 'boolean', help: 'submit: follow the plan to its end and print the deliverable' },
  timeout: { type: 'string', help: 'give up waiting after this many seconds (exit code 6)' },
  committee: {
    type: 'string',
    help: 'comma-separated scorer peer ids (default: at most 32 drawn from the scorers this peer sees)'
  },
  quorum: { type: 'string', help: 'ballots that accept a split (default: a majority of the committee)' },
  'max-depth': { type: 'string', help: 'depth of the deepest leaves (root = 0; default 3)' },
  'min-children': { type: 'string', help: 'fewest subgoals per split (default 2)' },
  'max-children': { type: 'string', help: 'most subgoals per split (default 7)' },
  'max-attempts': { type: 'string', help: 'decomposition and execution attempts (default 3)' },
  'lease-ms': { type: 'string', help: 'a claim holds a task this long between renewals (default 15000)' },
  'max-claim-ms': { type: 'string', help: 'no claim lasts longer (default 600000)' },
  'max-nodes': { type: 'string', help: 'largest tree (default 200)' },
  'retain-days': {
    type: 'string',
    help: 'submit: whole days every node keeps the plan once it is finished, 1-3650 (default 30; then archived and removed)'
  },
  budget: { type: 'string', help: 'token budget (default 2000000)' },
  'max-tokens-per-call': { type: 'string', help: 'most tokens one event may count (default 16000)' },
  'max-claims-per-executor': { type: 'string', help: 'live claims one executor may hold in this plan (default 2)' },
  review: { type: 'boolean', help: 'results need a committee quorum of accepting reviews' },
  approver: {
    type: 'string',
    multiple: true,
    help: 'submit: a person (peer id) whose ballot is needed besides the quorum (repeatable; added to the committee)'
  },
  approve: {
    type: 'string',
    help: 'submit: what approvers approve: splits | results | both (default both; splits without --review)'
  },
  executors: {
    type: 'string',
    help: 'submit: who executes tasks: model | outside | any (default model; outside: agents and people, through MCP or `task`)'
  },
  'use-tools': {
    type: 'boolean',
    help: "submit: the plan uses executors' tools: leaves may name what they need and go to executors that offer it"
  },
  trust: {
    type: 'boolean',
    help:
      'submit: protocol 5, rules that hold against a dishonest member (docs/security.md); nodes of earlier ' +
      'releases only store and relay such a plan'
  },
  'review-one-in': {
    type: 'string',
    help:
      "submit, with --trust: without --review the committee still reviews each member's first results, all after " +
      'a rejection, and one result in N of the rest, 0-1000 (default 0: none; 4 is a good start)'
  },
  reason: { type: 'string', help: 'cancel, task release: why (shown to everyone)' },
  plan: { type: 'string', help: 'task next: take a task of this plan only' },
  file: { type: 'string', help: 'task done: the file holding the result (- for stdin)' },
  choose: {
    type: 'string',
    help: 'vote: P1, P2, ... (as inbox lists the proposals), a proposal id, or none (with --notes)'
  },
  notes: { type: 'string', help: 'vote, review: what to change or redo (shown to the decomposers and executors)' },
  accept: { type: 'boolean', help: 'review: accept the result' },
  reject: { type: 'boolean', help: 'review: reject the result (with --notes); the task is redone' }
} as const

/** The name of any long option, of a node or of an author command. */
export type OptionName = keyof typeof OPTIONS | keyof typeof CLIENT_OPTIONS

/** `PLAN_SWARM_<NAME>` for an option name: `--data-dir` reads PLAN_SWARM_DATA_DIR. */
export function envName(option: string): string {
  return `PLAN_SWARM_${option.replace(/-/g, '_').toUpperCase()}`
}

/** The variable an option may also be given as; none for --version, which would stop every node it reached. */
export function optionEnv(option: string): string | undefined {
  return option === 'version' ? undefined : envName(option)
}

/** What each exit code of the CLI means (src/cli.ts maps errors to them). */
export const EXIT_CODE_MEANINGS: ReadonlyArray<readonly [number, string]> = [
  [0, 'ok'],
  [1, 'failure (or the plan failed)'],
  [2, 'bad flags or configuration'],
  [3, 'data dir in use'],
  [4, 'port in use'],
  [5, 'the plan was cancelled'],
  [6, 'timed out waiting']
]
