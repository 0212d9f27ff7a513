/**
 * A node's life: the in-process memory transport for tests, stop() leaving
 * nothing behind (a process that only stops its nodes then exits on its
 * own), and calls after stop.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { SwarmNodeConfigError, SwarmNodeStoppedError } from '../../src/net/errors.js'
import { createSwarmNode } from '../../src/net/node.js'
import { helperPath, spawnNetChild, stopNetChildren } from '../helpers/net-child.js'
import { createNodePool, fakeEvent, newKey } from '../helpers/net-nodes.js'
import { waitUntil } from '../helpers/wait.js'

const pool = createNodePool()
afterEach(async () => {
  await pool.stopAll()
  await stopNetChildren()
})

describe('swarm node lifecycle', () => {
  it('gossips over the in-process memory transport', async () => {
    const a = await pool.start({ transports: 'memory', listen: undefined })
    expect(a.addresses()[0]).toMatch(/^\/memory\/.+\/p2p\/12D3KooW/)
    const b = await pool.start({ transports: 'memory', listen: undefined, bootstrap: [a.addresses()[0] as string] })
    await waitUntil('B to see A subscribed', () => b.eventTopicPeers().includes(a.peerId), 15_000)
    const ev = fakeEvent('memory')
    expect(await b.publishEvent(ev.id, ev.bytes)).toEqual({ recipients: 1 })
    await waitUntil('the event at A', () => a.seen.ids.includes(ev.id), 15_000)
  })

  it('leaves no handle behind: a process that stops its nodes exits by itself', async () => {
    const child = spawnNetChild(process.execPath, ['--import', 'tsx', helperPath('net-exit-child.ts')])
    await child.waitForLine(l => l === 'delivered', 30_000)
    await child.waitForLine(l => l === 'stopped', 10_000)
    const exit = await Promise.race([
      child.exited,
      new Promise<'hung'>(resolve => setTimeout(() => resolve('hung'), 10_000))
    ])
    expect(exit, `the child did not exit after stopping its nodes; stderr: ${child.stderr()}`).toEqual({
      code: 0,
      signal: null
    })
  })

  it('refuses to publish after stop, and stop is idempotent', async () => {
    const a = await pool.start()
    await Promise.all([a.stop(), a.stop()])
    const ev = fakeEvent('late')
    await expect(a.publishEvent(ev.id, ev.bytes)).rejects.toBeInstanceOf(SwarmNodeStoppedError)
  })

  it('refuses a bad swarm name or address with a configuration error', async () => {
    await expect(
      createSwarmNode({
        privateKey: await newKey(),
        swarm: 'Bad Name',
        bootstrap: [],
        mdns: false,
        eventValidator: () => 'accept'
      })
    ).rejects.toBeInstanceOf(SwarmNodeConfigError)
    await expect(
      createSwarmNode({
        privateKey: await newKey(),
        swarm: 'ok',
        bootstrap: ['127.0.0.1:4001'],
        mdns: false,
        eventValidator: () => 'accept'
      })
    ).rejects.toThrow(/bootstrap address "127.0.0.1:4001" is not a multiaddr/)
  })
})
