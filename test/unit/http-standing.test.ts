/**
 * GET /standing (src/http/server.ts, ADR-0048): every member with evidence
 * against it in the node's version-5 plans, as JSON; an empty list from a
 * view that keeps none.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { startHttpServer } from '../../src/http/server.js'
import type { HttpServer, HttpView } from '../../src/http/server.js'
import type { PeerRecord } from '../../src/core/peer-standing.js'

const servers: HttpServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

async function serve(view: Partial<HttpView>): Promise<HttpServer> {
  const server = await startHttpServer('127.0.0.1', 0, view as HttpView)
  servers.push(server)
  return server
}

describe('GET /standing', () => {
  it('lists the records the view keeps', async () => {
    const record = {
      peer: 'p1',
      counts: { equivocation: 2 },
      total: 2,
      plans: ['a'.repeat(64)],
      equivocatedIn: ['a'.repeat(64)],
      penalty: 2
    } as unknown as PeerRecord
    const server = await serve({ standing: () => [record] })
    const res = await fetch(`${server.url}/standing`)
    expect(res.status).toBe(200)
    expect(await res.json()).toStrictEqual([record])
  })

  it('answers an empty list where the view keeps none', async () => {
    const server = await serve({})
    expect(await (await fetch(`${server.url}/standing`)).json()).toStrictEqual([])
  })
})
