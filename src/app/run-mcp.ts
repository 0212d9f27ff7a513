import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { startPeer, VERSION } from './peer.js'
import { createOutsideExecutor } from '../../roles/outside-executor.js'
import { createSwarmMcp } from '../mcp/server.js'
import { startTracing } from '../telemetry/tracing.js'
import { startMcpHttp } from '../mcp/http.js'
import { ConfigError, helpText, parseClientArgs } from '../runtime/config.js'
import { PACKAGE_VERSION } from '../runtime/version.js'
import { GoalRate } from '../author/goal-rate.js'
import type { NodeConfig } from '../runtime/config.js'
import type { NodeView } from '../ports/node-view.js'

/** Everything MCP needs over one node: its tools' state, and the HTTP endpoint when asked for. */
export async function startMcpOver(
  view: NodeView,
  config: NodeConfig,
  say: (line: string) => void,
  rate = new GoalRate(config.goalsPerMinute)
): Promise<{
  mcp: ReturnType<typeof createSwarmMcp>
  http: Awaited<ReturnType<typeof startMcpHttp>> | undefined
  close: () => Promise<void>
}> {
  const outside = createOutsideExecutor(view, { silenceMs: config.workerSilenceMs, say })
  const mcp = createSwarmMcp({ view, outside, rate, say }, PACKAGE_VERSION)
  const http =
    config.mcpHttp === undefined ? undefined : await startMcpHttp(mcp, config.mcpHttp.host, config.mcpHttp.port)
  return {
    mcp,
    http,
    close: async () => {
      await http?.close()
      mcp.close()
    }
  }
}

/**
 * `npm start -- mcp [node options]`: an MCP server on stdin/stdout with a
 * swarm node of its own (role `client` in the roster, its own data dir
 * `<swarm dir>/mcp-<n>` and key, the author of what it submits). stdout
 * carries the protocol only: every line for people goes to stderr. It stops
 * when the client closes stdin, or on SIGINT/SIGTERM.
 */
export async function runMcp(argv: readonly string[]): Promise<number> {
  const { config, positionals } = parseClientArgs(argv)
  if (config.help) {
    console.error(helpText())
    return 0
  }
  if (positionals.length > 0)
    throw new ConfigError(
      `mcp takes node options only (got ${positionals.join(' ')}); e.g. npm start -- mcp --bootstrap /ip4/.../p2p/12D3KooW...`
    )
  const say = (line: string): void => {
    console.error(`[mcp] ${line}`)
  }
  const peer = await startPeer(config, { dirName: 'mcp', syncIntervalMs: 5_000 })
  const tracing = await startTracing({ url: config.otlp, view: peer.view, version: VERSION })
  const served = await startMcpOver(peer.view, config, say)
  const handle = serveStdio(served.mcp.connectionFactory, {
    onerror: err => {
      say(`protocol error: ${err.message}`)
    }
  })
  say(
    `plan-swarm MCP server ${peer.view.me} in swarm "${config.swarm}" (data ` +
      `dir ${peer.dataDir})${served.http === undefined ? '' : `; also at ${served.http.url} (token ${served.http.token})`}`
  )
  await new Promise<void>(resolve => {
    const stop = (): void => {
      resolve()
    }
    process.stdin.once('end', stop)
    process.stdin.once('close', stop)
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  say('stopping...')
  await handle.close()
  await served.close()
  await tracing.stop()
  await peer.stop()
  return 0
}
