/**
 * A malicious member on real processes: a swarm of CLI nodes (observer, decomposer, three scorers, two executors)
 * driven by the fake LLM server, every process behind one `--allow-peers` list, plans a version-5 goal
 * (`submit --trust`) with a member that is admitted like the others but runs test/helpers/malicious-main.ts: the
 * node runtime with the simulator's dishonest policies (src/sim/byzantine) in place of honest roles. It sits on the
 * committee (one of four) and publishes correctly signed, crafted events for the eight attacks of issue 43: claims
 * stamped one tick after readyAt, hoarding (renewals to maxClaimMs, a takeover of its own chain, claims over the
 * limit), results for tasks it does not hold and back-dated rewrites after completion, late second proposals and
 * ballots (equivocation), sybil keys relayed through its connection, proposals reporting the most usage (budget),
 * 71 proposals in one attempt (stall), and parked junk of about 57 KB an event (memory).
 *
 * Checked: the plan completes with honest results (no output of the member's is accepted); after completion its
 * status and deliverable never change on any honest node while the member keeps attacking; every honest node folds one
 * treeHash and the invariants hold (nothing stored is lost, no invalid event stored); the tree's standing names the
 * member with evidence of each kind it earned; no sybil key got into a roster, a committee or a tree; no honest
 * process crashed.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { loadOrCreateIdentity } from '../../src/store/identity.js'
import { claimRank } from '../../src/core/trust-rules.js'
import { REPO_ROOT, spawnCommand, tempDir } from '../helpers/cli-process.js'
import { ResilienceSwarm, Stopwatch, fetchPlan, printMeasured } from '../helpers/swarm.js'
import { waitUntil } from '../helpers/wait.js'
import type { CliChild } from '../helpers/cli-process.js'
import { byLabel } from '../helpers/metrics-text.js'
import type { PlanTree } from '../../src/core/tree.js'

const PLAN_MS = 150_000
const BUDGET = 400_000
const PLAN_ARGS = [
  '--trust',
  '--max-depth',
  '2',
  '--lease-ms',
  '3000',
  '--max-claim-ms',
  '8000',
  '--budget',
  String(BUDGET)
]
const SYBILS = 3
const JUNK = 100

/** The member's counts from its last `sent` line. */
function sentOf(child: CliChild): Record<string, number> {
  const line = [...child.lines].reverse().find(l => l.includes('"event":"sent"'))
  return line === undefined ? {} : (JSON.parse(line) as { counts: Record<string, number> }).counts
}

/** What must never change once the plan completed: its status and its accepted results, the deliverable's first. */
function finish(t: PlanTree): string {
  return JSON.stringify({
    status: t.status,
    deliverable: t.deliverable,
    accepted: t.tasks.map(x => [x.id, x.accepted])
  })
}

/** What changed between two trees of one plan: its status, and each task whose accepted result changed (by whom). */
function changed(before: PlanTree, after: PlanTree): string {
  const out: string[] = []
  if (before.status !== after.status) out.push(`status ${before.status} -> ${after.status}`)
  for (const t of after.tasks) {
    const was = before.tasks.find(x => x.id === t.id)
    if (was?.accepted === t.accepted) continue
    const r = t.results.find(x => x.id === t.accepted)
    const root = after.deliverable?.task === t.id ? ' (the deliverable)' : ''
    out.push(`task ${t.id.slice(0, 8)}${root}: ${t.kind}, now ${r?.author ?? 'none'} "${r?.output.slice(0, 40) ?? ''}"`)
    out.push(`  chains ${JSON.stringify(t.chains.map(c => [c.owner.slice(-6), c.claimedAt, c.end?.kind ?? null]))}`)
  }
  return out.join('; ')
}

describe('resilience: a malicious member under protocol 5', () => {
  let s: ResilienceSwarm | undefined
  let member: CliChild | undefined
  afterAll(async () => {
    await member?.stop(5_000)
    await s?.close()
  }, 60_000)

  it('cannot take over, rewrite or stall the plan, and its standing shows what it did', async () => {
    const clock = new Stopwatch()
    const memberDir = join(tempDir('res-malicious-member'), 'member')
    const memberId = (await loadOrCreateIdentity(memberDir)).peerId.toString()
    s = await ResilienceSwarm.start({
      label: 'malicious',
      fake: { latencyMs: 300, auto: { children: 2, leafDepth: 2 } },
      allowPeers: [memberId],
      nodes: [
        { role: 'observer' },
        { role: 'decomposer' },
        { role: 'scorer' },
        { role: 'scorer' },
        { role: 'scorer' },
        { role: 'executor' },
        { role: 'executor' }
      ]
    })
    const swarm = s
    clock.mark('swarm up')
    member = spawnCommand(
      [
        process.execPath,
        '--import',
        'tsx',
        join(REPO_ROOT, 'test/helpers/malicious-main.ts'),
        '--swarm',
        swarm.swarm,
        '--bootstrap',
        swarm.seed.addresses[0] as string,
        '--data-dir',
        memberDir,
        '--allow-peers',
        swarm.allowPeersFile as string,
        '--model',
        'fake-malicious',
        '--sybils',
        String(SYBILS),
        '--junk',
        String(JUNK)
      ],
      { env: swarm.env, name: 'malicious' }
    )
    const started = await member.waitForJson(o => o.event === 'started', 120_000)
    expect(started.peerId).toBe(memberId)
    const sybils = started.sybils as string[]
    await swarm.waitRoster(swarm.seed, [memberId])
    clock.mark('member up')

    const scorers = swarm.ofRole('scorer').map(n => n.peerId)
    const executors = swarm.ofRole('executor').map(n => n.peerId)
    const sub = await swarm.submit('plan a weekend in Lisbon', [
      '--committee',
      [...scorers, memberId].join(','),
      ...PLAN_ARGS
    ])
    clock.mark('submitted')
    expect(sub.committee).toHaveLength(4)
    const fail = (err: Error): never => {
      throw new Error(`${err.message}\n${member?.tail(3000) ?? ''}\n${swarm.tails(1000)}`)
    }
    const done = await swarm
      .waitPlan(swarm.seed, sub.plan, 'the attacked plan to complete', t => t.status === 'completed', PLAN_MS)
      .catch(fail)
    const planMs = clock.since('submitted')
    const honest = swarm.nodes.filter(n => n.alive)
    for (const n of honest) swarm.snapshot(n, 'at completion')

    // Completed with honest results: every accepted result is an honest executor's.
    const fixed = finish(done)
    for (const task of done.tasks) {
      const r = task.results.find(x => x.id === task.accepted)
      expect(r, `task ${task.id} has an accepted result`).toBeDefined()
      expect(executors, `the accepted result of ${task.id} is an honest executor's`).toContain(r?.author)
    }

    // While the member keeps attacking the completed plan (late proposals and ballots, back-dated rewrites every
    // few seconds), nothing that finished changes on any honest node.
    const rewritesAtDone = sentOf(member)['late-rewrites'] ?? 0
    // Whether a back-dated claim of the member would outrank the claim whose result is the deliverable.
    const rootTask = done.tasks.find(t => t.id === done.deliverable?.task)
    const rootOwner = rootTask?.results.find(r => r.id === rootTask.accepted)?.author
    const rootOutranked =
      rootTask !== undefined &&
      rootOwner !== undefined &&
      claimRank(rootTask.id, memberId) < claimRank(rootTask.id, rootOwner)
    let polls = 0
    const changes: string[] = []
    await waitUntil(
      'the member to make two rounds of late rewrites and send its junk (or a finished plan to change)',
      async () => {
        for (const n of honest) {
          const b = await fetchPlan(n, sub.plan)
          if (b === undefined) continue
          polls++
          if (finish(b.tree) !== fixed) changes.push(`${n.name}: ${changed(done, b.tree)}`)
        }
        const rewrites = (sentOf(member as CliChild)['late-rewrites'] ?? 0) - rewritesAtDone
        const late = member?.lines.some(l => l.includes('"kind":"late"')) === true
        const junk = sentOf(member as CliChild)['parked-junk'] ?? 0
        return changes.length > 0 || (rewrites >= 2 * done.tasks.length && late && junk >= JUNK) ? true : undefined
      },
      90_000
    ).catch(fail)
    // The committee reviews the deliverable, and what it accepted is final with all it rests on (ADR-0053).
    expect(
      changes,
      `a finished plan changed on an honest node${rootOutranked ? ' (the member outranked the root’s holder)' : ''}`
    ).toEqual([])
    await member.stop(10_000)
    const sent = sentOf(member)

    const report = await swarm.checkInvariants({ plans: [sub.plan], convergeTimeoutMs: 60_000 })
    expect(report.failures, `${report.failures.join('\n')}\n${swarm.tails()}`).toEqual([])
    for (const n of honest) expect(n.alive && n.child !== undefined, `${n.name} is still running`).toBe(true)
    const final = (await swarm.plan(swarm.seed, sub.plan))?.tree
    expect(final).toBeDefined()
    const tree = final as PlanTree
    expect(finish(tree)).toBe(fixed)
    expect(tree.status).toBe('completed')

    // Standing: the member, with evidence of each kind it earned.
    const standing = tree.standing
    expect(standing, 'a version-5 tree has a standing').toBeDefined()
    const kinds = new Set((standing?.evidence ?? []).filter(e => e.author === memberId).map(e => e.kind))
    const evidence = JSON.stringify([...kinds])
    expect(standing?.equivocators, 'it equivocated (stuffed proposals, late second proposals and ballots)').toContain(
      memberId
    )
    expect(kinds.has('equivocation'), evidence).toBe(true)
    // Its claims of every ready task, one tick after readyAt, go over its limit only if it sees more ready tasks at
    // once than its limit: with the honest nodes on the bundle the leaves are often claimed and built on before it
    // looks, and its claims are then passed over as late (fold 11.5), which its rewrites earn too. The rule itself is
    // held by test/unit/fold-v5.test.ts; here either kind shows the claims it made.
    expect(kinds.has('claim-over-limit') || kinds.has('late'), `it claimed every ready task: ${evidence}`).toBe(true)
    expect(kinds.has('result-not-held'), `it reported results for tasks it did not hold: ${evidence}`).toBe(true)
    // It renews a chain up to maxClaimMs and then claims the task again, a takeover of its own chain that the fold
    // refuses. Only a chain that reached that cap while the plan ran shows it: a backup (ADR-0054) may supersede the
    // chain sooner, and the plan may finish first.
    const cap = tree.params.maxClaimMs
    const doneAtMs = rootTask?.finishedAt?.ms ?? Number.POSITIVE_INFINITY
    const capped = tree.tasks.flatMap(t =>
      t.chains.filter((c, i) => {
        if (c.owner !== memberId) return false
        const until =
          c.end === null ? doneAtMs : c.end.kind === 'superseded' ? t.chains[i + 1]?.claimedAt.ms : undefined
        return until !== undefined && until >= c.claimedAt.ms + cap
      })
    )
    if (capped.length > 0)
      expect(kinds.has('self-takeover'), `${capped.length} of its chains reached maxClaimMs: ${evidence}`).toBe(true)
    for (const e of standing?.evidence ?? [])
      expect([memberId, ...executors, ...scorers], `evidence against ${e.author}`).toContain(e.author)

    // Stamps: it claimed every ready task one tick after readyAt, and did not win them all.
    const firstChains = tree.tasks.filter(t => t.chains[0]?.owner === memberId)
    expect(firstChains.length, 'tasks whose first chain is the member').toBeLessThan(tree.tasks.length)
    const wonOutranked = firstChains.filter(({ id }) =>
      executors.some(x => claimRank(id, x) < claimRank(id, memberId))
    ).length

    // Budget: the usage its void proposals reported did not count.
    const maxPerCall = tree.params.maxTokensPerCall
    expect(tree.spentTokens, 'spent tokens').toBeLessThan(BUDGET)
    expect(sent['stuffed-attempts'] ?? 0, 'it stuffed the root attempt').toBeGreaterThan(0)

    // Stall: the root's attempt with the member's 71 proposals was decided, without the member's proposals.
    const root = tree.nodes[0]
    const decided = root?.attempts.find(a => a.winner !== null)
    expect(decided, 'the root attempt was decided').toBeDefined()
    const winner = decided?.proposals.find(x => x.id === decided.winner)
    expect(winner?.author, 'the stuffed attempt was won by an honest proposal').not.toBe(memberId)
    const memberWins = tree.nodes.flatMap(n =>
      n.attempts.filter(a => a.proposals.some(x => x.id === a.winner && x.author === memberId))
    ).length

    // Sybils: refused on every honest node (not on the allow-list), in no roster, committee or tree.
    const rejected: Record<string, number> = {}
    const ignored: Record<string, number> = {}
    let maxParked = 0
    for (const n of honest) {
      const st = await swarm.status(n)
      for (const sy of sybils)
        expect(
          st.roster.map(r => r.peerId),
          `${n.name}'s roster`
        ).not.toContain(sy)
      const text = await (await fetch(`${n.http}/metrics`)).text()
      for (const [k, v] of Object.entries(byLabel(text, 'plan_swarm_events_rejected_total', 'reason')))
        rejected[k] = (rejected[k] ?? 0) + v
      for (const [k, v] of Object.entries(byLabel(text, 'plan_swarm_events_ignored_total', 'why')))
        ignored[k] = (ignored[k] ?? 0) + v
      maxParked = Math.max(maxParked, Number(/^plan_swarm_events_parked\s+(\S+)$/m.exec(text)?.[1] ?? 0))
    }
    expect(sent['sybil-claims'] ?? 0, 'the sybils claimed').toBeGreaterThan(0)
    expect(rejected['not-allowed'] ?? 0, `sybil events refused: ${JSON.stringify(rejected)}`).toBeGreaterThan(0)
    for (const c of tree.committees) for (const sy of sybils) expect(c.members).not.toContain(sy)
    const authors = new Set(tree.tasks.flatMap(t => t.chains.map(c => c.owner)))
    for (const sy of sybils) expect(authors.has(sy as never), 'a sybil holds a chain').toBe(false)

    // Memory: the parked junk stayed out of every store (the invariants) and under the cap.
    expect(sent['parked-junk'] ?? 0, 'it sent parked junk').toBeGreaterThan(0)

    printMeasured('malicious-member', {
      honestNodes: honest.length,
      startMs: clock.marks['swarm up'],
      planMs,
      polls,
      sent,
      evidence: [...kinds].sort(),
      evidenceItems: (standing?.evidence ?? []).filter(e => e.author === memberId).length,
      tasks: tree.tasks.length,
      firstChainsOfMember: firstChains.length,
      firstChainsOutrankedByHonest: wonOutranked,
      memberChains: tree.tasks.reduce((n, t) => n + t.chains.filter(c => c.owner === memberId).length, 0),
      memberChainsCapped: capped.length,
      memberWonAttempts: memberWins,
      memberOutranksDeliverable: rootOutranked,
      spentTokens: tree.spentTokens,
      drainedIfCounted: ((sent['stuffed-attempts'] ?? 0) * 71 + 1) * maxPerCall,
      rejected,
      ignored,
      maxParked,
      treeNodes: report.plans[0]?.nodes,
      maxRssMb: Math.round(Math.max(...Object.values(report.rssBytes)) / 2 ** 20)
    })
  }, 600_000)
})
