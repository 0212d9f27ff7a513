import { expect, it, vi } from 'vitest'

// Every node pays for the modules it loads, idle or not (bench/net/footprint.ts): the MCP
// server and the model SDKs held about 12 MB and 7 MB of heap in a node that used neither;
// UPnP (an SSDP client, an XML parser) and WebSockets (ws) were a sixth of the main bundle.
const { loaded, track } = vi.hoisted(() => {
  const loaded = { mcp: false, provider: false, upnp: false, websockets: false }
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

it('loading the node entry point loads neither the MCP server, the model providers, UPnP nor WebSockets', async () => {
  const mod = await import('../../src/app/run-node.js')
  expect(typeof mod.runNode).toBe('function')
  expect(loaded).toEqual({ mcp: false, provider: false, upnp: false, websockets: false })
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
