import { expect, it, vi } from 'vitest'

// Every node pays for the modules it loads, idle or not (bench/net/footprint.ts): the MCP
// server and the model SDKs held about 12 MB and 7 MB of heap in a node that used neither;
// UPnP (an SSDP client, an XML parser) and WebSockets (ws) were a sixth of the main bundle. An idle
// observer without --http also loaded the HTTP server and the dashboard, the other roles' code, mDNS
// and pnet when not asked for, and prom-client's index (its Pushgateway brought node:http, node:https
// and node:zlib; its process metrics perf_hooks and @opentelemetry/api).
const { loaded, track } = vi.hoisted(() => {
  const loaded = {
    mcp: false,
    provider: false,
    upnp: false,
    websockets: false,
    httpServer: false,
    dashboard: false,
    roleDriver: false,
    decomposer: false,
    scorer: false,
    executor: false,
    mdns: false,
    pnet: false,
    promClientIndex: false,
    processMetrics: false
  }
  /** A vi.mock factory that loads the real module and notes that it was loaded. */
  const track = (key: keyof typeof loaded) => async (importOriginal: () => Promise<unknown>) => {
    loaded[key] = true
    return await importOriginal()
  }
  return { loaded, track }
})
vi.mock('../../src/app/run-mcp.js', track('mcp'))
vi.mock('../../src/app/create-provider.js', track('provider'))
vi.mock('@libp2p/upnp-nat', track('upnp'))
vi.mock('@libp2p/websockets', track('websockets'))
vi.mock('../../src/http/server.js', track('httpServer'))
vi.mock('../../src/http/dashboard/routes.js', track('dashboard'))
vi.mock('../../roles/driver.js', track('roleDriver'))
vi.mock('../../roles/decomposer.js', track('decomposer'))
vi.mock('../../roles/scorer.js', track('scorer'))
vi.mock('../../roles/executor.js', track('executor'))
vi.mock('@libp2p/mdns', track('mdns'))
vi.mock('@libp2p/pnet', track('pnet'))
vi.mock('prom-client', track('promClientIndex'))
vi.mock('prom-client/lib/defaultMetrics.js', track('processMetrics'))

it('loading the node entry point loads none of what only some nodes use', async () => {
  const mod = await import('../../src/app/run-node.js')
  expect(typeof mod.runNode).toBe('function')
  expect(Object.entries(loaded).filter(([, yes]) => yes)).toEqual([])
})

it('a NodeMetrics loads the process metrics only when asked for, and they are in its text then', async () => {
  const { NodeMetrics } = await import('../../src/runtime/metrics.js')
  const m = new NodeMetrics()
  m.accepted.inc({ source: 'gossip' })
  const before = await m.text()
  expect(before).toMatch(/^plan_swarm_events_accepted_total\{source="gossip"\} 1$/m)
  expect(before).not.toMatch(/plan_swarm_process_cpu/)
  expect(loaded.processMetrics).toBe(false)
  await m.addProcessMetrics()
  expect(loaded.processMetrics).toBe(true)
  expect(await m.text()).toMatch(/^plan_swarm_process_cpu_seconds_total \d/m)
  expect(loaded.promClientIndex).toBe(false)
})

it('a node loads UPnP and WebSockets when its options ask for them', async () => {
  const { natAssembly } = await import('../../src/net/nat.js')
  const plain = await natAssembly(['/ip4/0.0.0.0/tcp/0'], 1, {})
  expect(loaded.upnp || loaded.websockets).toBe(false)
  expect(Object.keys(plain.services)).not.toContain('upnp')
  const asked = await natAssembly(['/ip4/0.0.0.0/tcp/0', '/ip4/0.0.0.0/tcp/0/ws'], 1, { upnp: true })
  expect(loaded).toMatchObject({ upnp: true, websockets: true })
  expect(Object.keys(asked.services)).toContain('upnp')
  expect(asked.transports).toHaveLength(2)
})
