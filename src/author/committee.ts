import { MAX_COMMITTEE } from '../core/limits.js'
import { hashParts } from '../core/hash.js'
import type { NodeView, RosterEntry } from '../ports/node-view.js'
import type { PeerIdString } from '../core/events.js'
import type { PeerRecord } from '../core/peer-standing.js'

/**
 * The default committee of a goal submitted without `--committee`: drawn from
 * the scorers in this node's roster so that one member with many keys cannot
 * be most of it. A key this node first heard of less than NEW_IDENTITY_MS
 * ago, or one of several behind one connection source (an IP address, a
 * relay: RosterEntry.source), is suspect; the others are trusted. The
 * committee is every trusted scorer (oldest known first, at most
 * MAX_COMMITTEE), then suspects drawn in a fixed order, at most the trusted
 * less three: one member's keys are then never half of it, even when one of
 * them is trusted (the first key behind its source) and every suspect is its.
 * Nothing here is a rule of the protocol: the committee is a parameter of the
 * goal, chosen by its author.
 *
 * What it cannot see: keys this node hears of only through others (not
 * connected here) have no source, and a node whose roster is young (a
 * `submit` client that just started) knows every key equally recently, so
 * then only the sources count. Keys made long ago and relayed stand as
 * trusted; an allow-list (`--allow-peers`) keeps unlisted keys out of the
 * roster altogether. ADR-0046.
 *
 * Standing (ADR-0048): a scorer with evidence against it in this node's
 * plans is drawn last. One whose record counts against it (a penalty: an
 * equivocation, say) is a suspect, after every other suspect; one with only
 * what honest members also leave (a late ballot) stays trusted, after every
 * clean trusted scorer.
 */

/** A key first heard of less than this long ago is suspect, while this node knows older ones. */
export const NEW_IDENTITY_MS = 5 * 60_000

/** The smallest committee that outvotes one faulty member (3f + 1, f = 1). */
export const MIN_FAULT_TOLERANT_COMMITTEE = 4

/** A scorer as the draw sees it. */
export interface Candidate {
  readonly peerId: string
  /** Milliseconds since this node first heard of it (Infinity for the node itself). */
  readonly firstSeenMs: number
  /** Where it connects from (RosterEntry.source), if known. */
  readonly source?: string
  /** Evidence items against it in this node's plans (PeerRecord.total); none when absent. */
  readonly evidence?: number
  /** What of that counts against it (PeerRecord.penalty). */
  readonly penalty?: number
}

export interface Drawn {
  readonly committee: PeerIdString[]
  /** Scorers in sight that were left out (suspects beyond the trusted, or beyond the cap). */
  readonly leftOut: number
}

/**
 * Draws a committee from `candidates` (see the module comment). `salt` fixes
 * the order suspects are drawn in (the drawing node's id): the same roster
 * gives the same committee. Sorted, as plan parameters are.
 */
export function drawCommittee(candidates: readonly Candidate[], salt: string, cap = MAX_COMMITTEE): Drawn {
  const unique = [...new Map(candidates.map(c => [c.peerId, c])).values()]
  // The node itself (Infinity) says nothing of how long this roster has listened.
  const anyOld = unique.some(c => c.firstSeenMs !== Infinity && c.firstSeenMs >= NEW_IDENTITY_MS)
  // Clean scorers first, then by age: one with evidence is trusted (if it is) after every clean one.
  const oldestFirst = [...unique].sort(
    (a, b) =>
      Number((a.evidence ?? 0) > 0) - Number((b.evidence ?? 0) > 0) ||
      b.firstSeenMs - a.firstSeenMs ||
      (a.peerId < b.peerId ? -1 : 1)
  )
  const sources = new Set<string>()
  const trusted: Candidate[] = []
  const suspects: Candidate[] = []
  for (const c of oldestFirst) {
    const recent = anyOld && c.firstSeenMs < NEW_IDENTITY_MS
    const sharesSource = c.source !== undefined && sources.has(c.source)
    if (c.source !== undefined) sources.add(c.source)
    if (recent || sharesSource || (c.penalty ?? 0) > 0) suspects.push(c)
    else trusted.push(c)
  }
  const chosen = trusted.slice(0, cap)
  const rank = (c: Candidate): string => hashParts('committee-draw', salt, c.peerId)
  // Suspects with a poor record after the others, the worst last.
  suspects.sort((a, b) => (a.penalty ?? 0) - (b.penalty ?? 0) || (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0))
  // A member's keys: at most one trusted plus every suspect; 1 + k < (t + k) / 2 holds for k <= t - 3.
  const room = Math.min(cap - chosen.length, chosen.length - 3)
  for (let i = 0; i < room && i < suspects.length; i++) chosen.push(suspects[i] as Candidate)
  return {
    committee: chosen.map(c => c.peerId).sort() as PeerIdString[],
    leftOut: unique.length - chosen.length
  }
}

/** The scorers of a roster, and the node itself if it is one, as candidates, with their standing (`records`). */
export function scorerCandidates(
  roster: readonly RosterEntry[],
  self: { readonly me: string; readonly role: string },
  records: readonly PeerRecord[] = []
): Candidate[] {
  const byPeer = new Map<string, PeerRecord>(records.map(r => [r.peer, r]))
  const out: Candidate[] = roster
    .filter(r => r.role === 'scorer' && r.peerId !== self.me)
    .map(r => {
      const rec = byPeer.get(r.peerId)
      return {
        peerId: r.peerId,
        firstSeenMs: r.firstSeenMs ?? 0,
        ...(r.source === undefined ? {} : { source: r.source }),
        ...(rec === undefined ? {} : { evidence: rec.total, penalty: rec.penalty })
      }
    })
  if (self.role === 'scorer') out.push({ peerId: self.me, firstSeenMs: Infinity })
  return out
}

/** The default committee from this node's roster, and what the submitter should be told about it. */
export function defaultCommittee(view: Pick<NodeView, 'roster' | 'role' | 'me' | 'standing'>): {
  committee: PeerIdString[]
  warnings: string[]
} {
  const drawn = drawCommittee(scorerCandidates(view.roster(), view, view.standing?.()), view.me)
  const warnings = committeeWarnings(drawn.committee)
  if (drawn.leftOut > 0)
    warnings.push(
      `${drawn.leftOut} scorers in sight were left out of the default committee: heard of only lately, ` +
        'more than the cap, several behind one address, or with evidence against them (GET /standing); ' +
        'name the committee to choose them yourself'
    )
  return { committee: drawn.committee, warnings }
}

/** What a submitter should know about its committee: too small to outvote one faulty member. */
export function committeeWarnings(committee: readonly string[]): string[] {
  if (committee.length === 0 || committee.length >= MIN_FAULT_TOLERANT_COMMITTEE) return []
  return [
    `a committee of ${committee.length} cannot outvote even one faulty member ` +
      `(it takes ${MIN_FAULT_TOLERANT_COMMITTEE}); start more scorers, or name ` +
      `${MIN_FAULT_TOLERANT_COMMITTEE} or more scorer peer ids as the committee (--committee ID,ID,...)`
  ]
}
