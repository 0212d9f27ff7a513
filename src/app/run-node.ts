import { startPeer } from './peer.js'
import { startObserver } from '../../roles/observer.js'
import { createSubmitToken } from '../http/dashboard/guard.js'
import { GoalRate } from '../author/goal-rate.js'
import { createLlmTelemetry } from '../telemetry/llm-spans.js'
import { startTracing } from '../telemetry/tracing.js'
import { VERSION } from '../runtime/node-runtime.js'
import { PACKAGE_VERSION } from '../runtime/version.js'
import { announcedOffers } from '../core/needs.js'
import { MAX_CAPABILITIES } from '../net/presence.js'
import type { NodeConfig } from '../runtime/config.js'
import type { Peer } from './peer.js'
import type { ToolHost } from '../tools/index.js'
import type { RoleHandler, RoleContext } from '../../roles/driver.js'

/** A role's handler, loaded only for a node of that role (an observer has none; each node runs one role). */
const HANDLERS: Record<string, () => Promise<(ctx: RoleContext) => RoleHandler>> = {
  decomposer: async () => (await import('../../roles/decomposer.js')).createDecomposer,
  scorer: async () => (await import('../../roles/scorer.js')).createScorer,
  executor: async () => (await import('../../roles/executor.js')).createExecutor
}

/**
 * `npm start -- --role <role>`: start a peer, say where it is, report
 * progress while it runs, and stop cleanly on SIGINT/SIGTERM.
 */
export async function runNode(config: NodeConfig): Promise<number> {
  // Choose the model first: a provider asked for but not configured is a config error before anything starts.
  const llm = createLlmTelemetry()
  // The model SDKs and the MCP server load only when this node uses them: loaded up front they held about 7 MB and 12 MB
  // of every node's heap (an observer has no model; most nodes have no --mcp-http).
  const choice =
    config.role === 'observer' || config.a2aAgent !== undefined
      ? undefined
      : (await import('./create-provider.js')).createProvider({
          provider: config.provider,
          model: config.model,
          cheapModel: config.cheapModel,
          baseUrl: config.baseUrl,
          env: process.env,
          hooks: llm.retryHooks
        })
  // An executor's tools start before the peer: a tools file that cannot be served stops the node before it joins.
  const toolHost = config.toolsFile === undefined ? undefined : await startTools(config.toolsFile)
  let peer: Peer
  try {
    peer = await startPeer(config)
  } catch (err) {
    await toolHost?.close()
    throw err
  }
  const view = peer.view
  // What the executor offers is announced in presence, and again whenever a server goes down or comes back.
  let announced: readonly string[] = []
  const announce = (): void => {
    if (toolHost === undefined) return
    announced = announcedOffers(toolHost.offers(), MAX_CAPABILITIES - 1)
    view.offer?.(announced)
  }
  announce()
  const stopWatching = toolHost?.onChange(announce)
  const print = (line: Record<string, unknown>, text: string): void => {
    console.log(config.json ? JSON.stringify({ t: new Date().toISOString(), ...line }) : text)
  }
  if (config.role === 'observer' && config.once) return await observeOnce(peer, config)
  // Spans over OTLP only with an endpoint; without one the SDK is never loaded.
  const tracing = await startTracing({
    url: config.otlp,
    view,
    version: VERSION,
    serviceName: process.env.OTEL_SERVICE_NAME
  })
  // The role's code (a node with a model runs its role's handler), loaded before saying "started" as before.
  const load = choice === undefined ? undefined : HANDLERS[config.role]
  const roleCode =
    load === undefined
      ? undefined
      : { make: await load(), startRole: (await import('../../roles/driver.js')).startRole }
  // Listen for the signals before saying "started": a SIGTERM right after that line still stops cleanly (and flushes spans).
  const signalled = new Promise<void>(resolve => {
    process.once('SIGINT', () => {
      resolve()
    })
    process.once('SIGTERM', () => {
      resolve()
    })
  })
  // The observer's dashboard: read-only, unless --allow-submit, which makes a token the page must present.
  const submitToken = config.role === 'observer' && config.allowSubmit ? createSubmitToken() : undefined
  // One count of goals a minute for everything this node serves: its dashboard, its MCP and A2A endpoints.
  const goalRate = new GoalRate(config.goalsPerMinute)
  // The dashboard's modules load only for the node that serves it: an observer with --http.
  const dashboard =
    config.role === 'observer' && peer.http !== undefined
      ? (await import('../http/dashboard/routes.js')).createDashboard(
          (await import('../http/dashboard/peer-source.js')).dashboardSource(view, goalRate),
          { submitToken }
        )
      : undefined
  const unmount = dashboard === undefined ? undefined : peer.http?.mount(dashboard.route)
  const dashboardUrl = dashboard === undefined || peer.http === undefined ? null : `${peer.http.url}/`
  const mcp =
    config.mcpHttp === undefined
      ? undefined
      : await (
          await import('./run-mcp.js')
        ).startMcpOver(
          view,
          config,
          line => {
            print({ event: 'mcp', line }, `[mcp] ${line}`)
          },
          goalRate
        )
  // --a2a: the swarm as an A2A agent, loaded only when asked for, like MCP.
  const a2a =
    config.a2a === undefined
      ? undefined
      : await (
          await import('../a2a/server-http.js')
        ).startA2aHttp(
          {
            view,
            rate: goalRate,
            version: PACKAGE_VERSION,
            say: line => {
              print({ event: 'a2a', line }, `[a2a] ${line}`)
            }
          },
          config.a2a.host,
          config.a2a.port
        )
  // The plans as /status lists them: those under way and the last to finish, not a long history's thousands.
  const s = view.status()
  print(
    {
      event: 'started',
      ...s,
      http: peer.http?.url ?? null,
      dashboard: dashboardUrl,
      ...(submitToken === undefined ? {} : { submitToken }),
      ...(mcp?.http === undefined ? {} : { mcp: mcp.http.url, mcpToken: mcp.http.token }),
      ...(a2a === undefined ? {} : { a2a: a2a.url, a2aCard: a2a.cardUrl, a2aToken: a2a.token })
    },
    [
      `plan-swarm ${config.role} ${s.peerId} in swarm "${config.swarm}"`,
      `  data dir  ${s.dataDir}`,
      ...s.addresses.map(a => `  listening ${a}`),
      `  status    ${peer.http === undefined ? '(no --http)' : `${peer.http.url}/status`}`,
      ...(dashboardUrl === null
        ? []
        : [
            `  dashboard ${dashboardUrl}${submitToken === undefined ? ' (read-only; --allow-submit lets it submit and cancel)' : ''}`
          ]),
      ...(submitToken === undefined
        ? []
        : [
            `  submit token ${submitToken}  (the page asks for it; or open ${dashboardUrl ?? ''}#token=${submitToken})`
          ]),
      ...(mcp?.http === undefined ? [] : [`  mcp       ${mcp.http.url}  (Authorization: Bearer ${mcp.http.token})`]),
      ...(a2a === undefined
        ? []
        : [`  a2a       ${a2a.url}  (Authorization: Bearer ${a2a.token}; card ${a2a.cardUrl})`]),
      `  discovery ${config.mdns ? 'mDNS' : 'no mDNS'}` +
        `${config.bootstrap.length > 0 ? ` + ${config.bootstrap.length} bootstrap address(es)` : ''}` +
        `${config.swarmKeyFile !== undefined ? ', swarm key' : ''}` +
        `${config.allowPeersFile !== undefined ? ', allowlist' : ''}`,
      `  holding   ${s.events.held} events in ${s.plans.length + s.plansOlder} plans`,
      ...(choice === undefined ? [] : [`  model     ${choice.banner}`]),
      ...(config.a2aAgent === undefined ? [] : [`  agent     ${config.a2aAgent} (A2A: every task goes to that agent)`]),
      ...(toolHost === undefined
        ? []
        : [
            `  tools     ${toolHost
              .servers()
              .map(x => `${x.name} (${x.tools} tool${x.tools === 1 ? '' : 's'})`)
              .join(', ')}; offers ${announced.join(', ')}`
          ]),
      ...(tracing.url === undefined ? [] : [`  tracing   OTLP/HTTP to ${tracing.url}`])
    ].join('\n')
  )
  if (choice?.provider.name === 'offline') console.error(choice.banner)

  const say = (line: string): void => {
    print({ event: 'role', line }, `[${config.role}] ${line}`)
  }
  const provider =
    choice === undefined
      ? undefined
      : llm.instrument(choice.provider, { meter: peer.metrics, tracer: tracing.tracer, clock: view.scheduler })
  const tools =
    toolHost === undefined ? undefined : { box: toolHost, offers: () => announced, limits: config.toolLimits }
  const ctx: RoleContext | undefined = provider === undefined ? undefined : { view, provider, say, tools }
  const role = roleCode === undefined || ctx === undefined ? undefined : roleCode.startRole(ctx, roleCode.make(ctx))
  // --a2a-agent: an executor without a model, whose tasks go to a remote A2A agent (loaded only then).
  const a2aExecutor =
    config.a2aAgent === undefined
      ? undefined
      : (await import('../a2a/executor.js')).startA2aExecutor(view, {
          url: config.a2aAgent,
          silenceMs: config.workerSilenceMs,
          say
        })
  const observer =
    config.role === 'observer'
      ? startObserver(view, {
          json: config.json,
          markdown: config.markdown,
          expand: config.expand,
          tty: process.stdout.isTTY,
          write: t => process.stdout.write(t)
        })
      : undefined

  // The plans as /status lists them (scripts read them from --json): not a long history's thousands.
  let last = ''
  const progress = setInterval(() => {
    if (observer !== undefined) return
    const { peers, roster, events, plans, plansOlder } = view.status()
    const line =
      `${peers} peers, ${roster.length} in roster, ${events.held} events (${events.parked} parked), ` +
      `${plans.length + plansOlder} plans${plansOlder > 0 ? ` (${plansOlder} finished earlier not listed)` : ''}` +
      plans.map(p => `\n  ${p.status.padEnd(16)} ${p.done}/${p.nodes} done  ${p.goal.slice(0, 60)}`).join('')
    if (line !== last) {
      last = line
      print({ event: 'progress', peers, events, plans, plansOlder }, line)
    }
  }, 5_000)

  await signalled
  clearInterval(progress)
  print({ event: 'stopping' }, 'stopping...')
  observer?.stop()
  await mcp?.close()
  await a2a?.close()
  unmount?.()
  dashboard?.close()
  await role?.stop()
  await a2aExecutor?.stop()
  stopWatching?.()
  await toolHost?.close()
  await tracing.stop()
  await peer.stop()
  return 0
}

/** `--tools FILE`: start or connect the executor's MCP servers (loaded only when given). */
async function startTools(file: string): Promise<ToolHost> {
  const { loadToolsFile, startToolHost } = await import('../tools/index.js')
  return await startToolHost(loadToolsFile(file), {
    version: VERSION,
    log: line => {
      console.error(`[tools] ${line}`)
    }
  })
}

/** `--role observer --once`: catch up with a peer (or give up after a while), print what there is, exit. */
async function observeOnce(peer: Peer, config: NodeConfig): Promise<number> {
  const view = peer.view
  const deadline = Date.now() + 15_000
  let synced = false
  while (!synced && Date.now() < deadline) {
    synced = (await view.syncOnce()) !== null
    if (!synced) await new Promise(resolve => setTimeout(resolve, 250))
  }
  if (!synced) console.error('no peer answered within 15 s: printing what this node holds')
  const o = startObserver(view, {
    json: config.json,
    markdown: config.markdown,
    expand: config.expand,
    tty: false,
    write: t => process.stdout.write(t)
  })
  o.stop()
  await peer.stop()
  return 0
}
