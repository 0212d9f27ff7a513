/**
 * MCP `swarm_standing` (src/mcp/tools/swarm-standing.ts, ADR-0048): the
 * evidence against each member, or one member's, with `poor` set where the
 * record counts against it; read-only.
 */
import { describe, expect, it } from 'vitest'
import { swarmStanding } from '../../src/mcp/tools/swarm-standing.js'
import { StandingBook } from '../../src/core/peer-standing.js'
import type { EventId, PeerIdString, PlanId } from '../../src/core/events.js'
import type { SwarmTools } from '../../src/mcp/tools/swarm-tool.js'

const A = 'peer-a' as PeerIdString
const B = 'peer-b' as PeerIdString

function tools(book: StandingBook | undefined): SwarmTools {
  return { view: book === undefined ? {} : { standing: () => book.records() } } as unknown as SwarmTools
}

describe('swarm_standing', () => {
  const book = new StandingBook()
  book.set('a'.repeat(64) as PlanId, {
    equivocators: [A],
    evidence: [
      { author: A, kind: 'equivocation', event: 'e1' as EventId },
      { author: B, kind: 'late', event: 'e2' as EventId }
    ]
  })

  it('lists every member with evidence, the poor first and marked', async () => {
    expect(swarmStanding.annotations?.readOnlyHint).toBe(true)
    const r = await swarmStanding.handle(tools(book), {}, {} as never)
    const members = (r.structuredContent as { members: Array<{ peer: string; poor: boolean }> }).members
    expect(members.map(m => [m.peer, m.poor])).toStrictEqual([
      [A, true],
      [B, false]
    ])
    expect((r.content[0] as { text: string }).text).toContain(`${A} (poor): 1 equivocation in 1 plan`)
  })

  it('answers for one member, and says when there is nothing', async () => {
    const one = await swarmStanding.handle(tools(book), { peer: B }, {} as never)
    expect((one.structuredContent as { members: unknown[] }).members).toHaveLength(1)
    const none = await swarmStanding.handle(tools(undefined), {}, {} as never)
    expect((none.content[0] as { text: string }).text).toMatch(/no evidence against any member/)
  })
})
