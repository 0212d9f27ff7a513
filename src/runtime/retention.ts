/**
 * Expiry on a running node (ADR-0040): every so often, the finished plans
 * whose retention ran out (src/core/retention.ts) are archived and taken
 * out of the store, the fold and the sync id set; tombstones of plans
 * expired long ago, and archives older than the node keeps, are deleted.
 * A backlog (a node's first start after a long time off) is worked off a
 * few plans at a time, so the node answers and works meanwhile.
 */
import { logger } from '@libp2p/logger'
import { DAY_MS } from '../core/retention.js'
import { pruneArchives, writeArchive } from '../store/archive.js'
import type { ArchiveHeader } from '../store/archive.js'
import type { Replica } from './replica.js'
import type { Scheduler } from '../ports/scheduler.js'

const log = logger('plan-swarm:retention')

/** Between passes with nothing left to do. */
export const RETENTION_PASS_MS = 60_000
/** Between passes while a backlog is worked off. */
const BACKLOG_PASS_MS = 1_000
/** Plans expired per pass at most. */
export const EXPIRE_PER_PASS = 25
/**
 * How long an expired plan's tombstones are kept (so sync fetches none of
 * its events from a peer that has not expired it yet, and late events of
 * it are refused): far beyond any clock skew the swarm tolerates.
 */
export const TOMBSTONE_KEEP_MS = 7 * DAY_MS
/** Archives are kept this many days by default (`--keep-archives`). */
export const DEFAULT_KEEP_ARCHIVES_DAYS = 30

export interface RetentionOptions {
  /** Where archives go (`<dir>/archive`); undefined: expired plans are not archived (the simulator). */
  readonly dataDir?: string
  /** Days an archive is kept; Infinity keeps every one. */
  readonly keepArchivesDays?: number
  /** Test hook: called after a plan's archive is on disk and before the store lets the plan go. */
  readonly afterArchive?: (plan: string) => void
}

/** Start the passes; the first runs on the next tick. Returns the stop function. */
export function startRetention(replica: Replica, scheduler: Scheduler, opts: RetentionOptions = {}): () => void {
  let nextAt = 0
  const keepArchivesMs = (opts.keepArchivesDays ?? DEFAULT_KEEP_ARCHIVES_DAYS) * DAY_MS
  return scheduler.every(BACKLOG_PASS_MS, () => {
    const now = scheduler.now()
    if (now < nextAt) return
    const left = retentionPass(replica, now, opts)
    nextAt = now + (left > 0 ? BACKLOG_PASS_MS : RETENTION_PASS_MS)
    if (left === 0 && opts.dataDir !== undefined && Number.isFinite(keepArchivesMs)) {
      const pruned = pruneArchives(opts.dataDir, keepArchivesMs, now)
      if (pruned > 0) log('deleted %d archives older than %d days', pruned, keepArchivesMs / DAY_MS)
    }
  })
}

/** One pass: expire up to EXPIRE_PER_PASS plans; returns how many more are due. */
export function retentionPass(replica: Replica, nowMs: number, opts: RetentionOptions = {}): number {
  const due = replica.expiredBy(nowMs)
  for (const plan of due.slice(0, EXPIRE_PER_PASS)) {
    try {
      replica.expire(plan, (rows, record) => {
        if (opts.dataDir === undefined || opts.keepArchivesDays === 0) return
        const header: ArchiveHeader = {
          format: 'plan-swarm-archive',
          version: 1,
          swarm: replica.swarm,
          plan,
          goal: record.summary.goal,
          status: record.status,
          treeHash: record.hash,
          lastStampMs: record.lastStampMs,
          retainDays: record.retainDays,
          expiredMs: nowMs,
          events: rows.length
        }
        writeArchive(opts.dataDir, header, rows)
        opts.afterArchive?.(plan)
      })
    } catch (err) {
      // The plan stays whole in the store; the next pass tries again.
      log.error('could not expire plan %s: %s', plan, (err as Error).message)
    }
  }
  replica.forgetExpired(nowMs - TOMBSTONE_KEEP_MS)
  return Math.max(0, due.length - EXPIRE_PER_PASS)
}
