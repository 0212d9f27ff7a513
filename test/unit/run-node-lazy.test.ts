import { expect, it, vi } from 'vitest'

// Every node pays for the modules it loads, idle or not (bench/net-footprint.ts): the MCP
// server and the model SDKs held about 12 MB and 7 MB of heap in a node that used neither.
const loaded = vi.hoisted(() => ({ mcp: false, provider: false }))
vi.mock('../../src/app/run-mcp.js', async (importOriginal) => {
  loaded.mcp = true
  return await importOriginal()
})
vi.mock('../../src/llm/create-provider.js', async (importOriginal) => {
  loaded.provider = true
  return await importOriginal()
})

it('loading the node entry point loads neither the MCP server nor the model providers', async () => {
  const mod = await import('../../src/app/run-node.js')
  expect(typeof mod.runNode).toBe('function')
  expect(loaded).toEqual({ mcp: false, provider: false })
})
