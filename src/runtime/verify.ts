import { createPublicKey, verify } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { logger } from '@libp2p/logger'
import { SIGNATURE_BYTES, signatureDomain, splitWire, signedMessage } from '../wire/codec.js'
import { ed25519KeyOf } from '../wire/peer-keys.js'
import type { KeyObject } from 'node:crypto'
import type { SignatureVerifier } from '../wire/decode.js'

const log = logger('plan-swarm:verify')

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow. */
const SPKI_ED25519 = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00])
const KEY_CACHE_SIZE = 10_000

/**
 * Node's native Ed25519 check, keeping each author's key object (building it
 * is most of the cost of a check that builds it every time, as
 * @libp2p/crypto's does). Same OpenSSL verification underneath, so it accepts
 * exactly the same signatures.
 */
export function createNativeVerifier(): SignatureVerifier {
  const keys = new Map<string, KeyObject>()
  return (author, publicKey, message, signature) => {
    let key = keys.get(author)
    if (key === undefined) {
      const der = new Uint8Array(SPKI_ED25519.length + publicKey.length)
      der.set(SPKI_ED25519)
      der.set(publicKey, SPKI_ED25519.length)
      key = createPublicKey({ key: Buffer.from(der.buffer), format: 'der', type: 'spki' })
      if (keys.size >= KEY_CACHE_SIZE) keys.clear()
      keys.set(author, key)
    }
    return verify(null, message, key, signature)
  }
}

/** `verifier`, calling `counted` before each check (to count them). */
export function countedVerifier(verifier: SignatureVerifier, counted: () => void): SignatureVerifier {
  return (author, publicKey, message, signature) => {
    counted()
    return verifier(author, publicKey, message, signature)
  }
}

/** Check the signature of one wire event claimed to be by `author`, signed for `swarm`. */
export function checkWireSignature(
  verifier: SignatureVerifier,
  swarm: string,
  author: string,
  bytes: Uint8Array
): boolean {
  const parts = splitWire(bytes)
  const key = ed25519KeyOf(author)
  if (parts === null || key === null) return false
  try {
    return verifier(author, key.raw, signedMessage(swarm, parts.envelopeBytes), parts.signature)
  } catch {
    return false
  }
}

/**
 * The worker: Node's Ed25519 check with a key object per author, as in
 * createNativeVerifier. It gets a share of a batch as one transferred buffer
 * (see `pack`) and builds each signed message itself (the swarm's domain,
 * then the envelope) in one scratch buffer, so the main thread neither copies
 * messages nor clones thousands of small arrays. Plain JavaScript evaluated by
 * the Worker, so it runs the same under tsx, vitest and built code, with no
 * file to find.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { createPublicKey, verify } = require('node:crypto')
const SPKI = Buffer.from('${Buffer.from(SPKI_ED25519).toString('hex')}', 'hex')
const SIG = ${SIGNATURE_BYTES}
const domain = Buffer.from(workerData.domain)
const keys = new Map()
let scratch = Buffer.allocUnsafe(domain.length + 4096)
domain.copy(scratch)
function keyOf(author, raw) {
  let key = keys.get(author)
  if (key !== undefined) return key
  try {
    key = createPublicKey({ key: Buffer.concat([SPKI, raw]), format: 'der', type: 'spki' })
  } catch { key = null }
  if (keys.size >= ${KEY_CACHE_SIZE}) keys.clear()
  keys.set(author, key)
  return key
}
parentPort.on('message', m => {
  const meta = new Uint32Array(m.buf, 0, 3 * m.n)
  const data = new Uint8Array(m.buf)
  const authorKeys = m.authors.map((a, i) => keyOf(a, m.raw[i]))
  const ok = new Uint8Array(m.n)
  for (let i = 0; i < m.n; i++) {
    const key = authorKeys[meta[3 * i]]
    const at = meta[3 * i + 1]
    const len = meta[3 * i + 2]
    if (key === undefined || key === null || len <= SIG) continue
    const envelope = len - SIG
    if (domain.length + envelope > scratch.length) {
      scratch = Buffer.allocUnsafe(2 * (domain.length + envelope))
      domain.copy(scratch)
    }
    scratch.set(data.subarray(at, at + envelope), domain.length)
    try {
      ok[i] = verify(null, scratch.subarray(0, domain.length + envelope), key, data.subarray(at + envelope, at + len)) ? 1 : 0
    } catch {}
  }
  parentPort.postMessage({ id: m.id, ok }, [ok.buffer])
})
`

export interface VerifyJob {
  readonly author: string
  readonly bytes: Uint8Array
}

interface Pending {
  readonly jobs: number
  resolve: (ok: Uint8Array) => void
  reject: (err: Error) => void
}

interface PoolWorker {
  readonly worker: Worker
  readonly pending: Map<number, Pending>
  /** Signatures sent to it and not answered yet. */
  load: number
}

/** A share of a batch as the worker reads it: one buffer, the authors it names, their raw keys. */
interface Packed {
  readonly id: number
  readonly n: number
  /** 3 u32 per job (author index, offset of its wire bytes, their length), then the wire bytes. */
  readonly buf: ArrayBuffer
  readonly authors: string[]
  readonly raw: Uint8Array[]
}

/** Author index of a job whose author names no Ed25519 key: the worker fails it, as the inline check does. */
const NO_KEY = 0xffff_ffff

/** Below this many signatures a batch is checked on the calling thread: a round trip to a worker costs more. */
export const MIN_POOL_BATCH = 64

/**
 * A batch goes to the workers in shares of this many signatures, each to the
 * least busy worker, as the batch is fed: a sync frame (about 1,400 events)
 * makes five or six, so the first are checked while the rest is decoded, and
 * a worker that finishes first takes the next.
 */
export const STREAM_SHARE = 256

/** Jobs fed one at a time; `done` gives one flag per job, in the order they were added. */
export interface VerifyBatch {
  add(job: VerifyJob): void
  done(): Promise<boolean[]>
}

/**
 * Signature checks on worker threads, for batches (a sync round brings
 * thousands of events; gossip brings them one at a time and is checked
 * inline). A batch is cut into shares, each sent to the least busy worker as
 * one transferred buffer; the shares are checked in parallel while the main
 * thread goes on with the network. Workers start on first use and stop with
 * `close`. A worker that fails or exits fails the batches it held: those are
 * checked on the calling thread, and so is every batch after.
 */
export class VerifyPool {
  private workers: PoolWorker[] | undefined
  private nextId = 0
  private busy = false
  private readonly inline = createNativeVerifier()
  private broken = false
  /** Signatures checked on workers, and on the calling thread. */
  readonly checked = { workers: 0, inline: 0 }

  constructor(
    private readonly swarm: string,
    private readonly size = Math.max(1, Math.min(4, availableParallelism())),
    /** Hears how many signatures each batch checked, wherever they were checked. */
    private readonly onChecked: (n: number) => void = () => {}
  ) {}

  /** One flag per job, in order: true when its signature checks out. */
  async verifyMany(jobs: readonly VerifyJob[]): Promise<boolean[]> {
    const batch = this.batch()
    for (const j of jobs) batch.add(j)
    return await batch.done()
  }

  /**
   * A batch fed one job at a time (as a sync frame is decoded): a share goes
   * to a worker as soon as STREAM_SHARE jobs are waiting, so the workers
   * check the first events while the caller decodes the rest.
   */
  batch(): VerifyBatch {
    const jobs: VerifyJob[] = []
    const parts: Array<Promise<Uint8Array>> = []
    let sent = 0
    const dispatch = (shares: number): void => {
      const workers = this.start()
      const per = Math.ceil((jobs.length - sent) / shares)
      for (; sent < jobs.length; sent = Math.min(jobs.length, sent + per))
        parts.push(this.send(leastBusy(workers), this.pack(jobs, sent, Math.min(jobs.length, sent + per))))
    }
    return {
      add: job => {
        jobs.push(job)
        if (this.broken) return
        // Big enough for the workers: start them now, so they are up by the time the first share is ready.
        if (jobs.length === MIN_POOL_BATCH) this.start()
        if (jobs.length - sent >= STREAM_SHARE) dispatch(1)
      },
      done: async () => {
        if (this.broken || (parts.length === 0 && jobs.length < MIN_POOL_BATCH)) return this.checkInline(jobs)
        // The rest, shared out: the workers that finished their shares take it.
        if (sent < jobs.length) dispatch(Math.min(this.size, Math.ceil((jobs.length - sent) / MIN_POOL_BATCH)))
        return await this.collect(jobs, parts)
      }
    }
  }

  private async collect(jobs: readonly VerifyJob[], parts: ReadonlyArray<Promise<Uint8Array>>): Promise<boolean[]> {
    try {
      const flags = await Promise.all(parts)
      const out: boolean[] = []
      for (const f of flags) for (const x of f) out.push(x === 1)
      this.checked.workers += out.length
      this.onChecked(out.length)
      return out
    } catch (err) {
      // A worker that died is not a reason to drop events: check them here instead.
      if (!this.broken)
        log.error(
          'verify worker failed (%s): checking signatures on the main thread from now on',
          (err as Error).message
        )
      this.broken = true
      await this.close()
      return this.checkInline(jobs)
    }
  }

  private checkInline(jobs: readonly VerifyJob[]): boolean[] {
    this.checked.inline += jobs.length
    this.onChecked(jobs.length)
    return jobs.map(j => checkWireSignature(this.inline, this.swarm, j.author, j.bytes))
  }

  async close(): Promise<void> {
    const workers = this.workers ?? []
    this.workers = undefined
    this.busy = false
    const closed = new Error('verify pool closed')
    for (const w of workers) failAll(w, closed)
    await Promise.all(workers.map(async w => w.worker.terminate()))
  }

  private start(): PoolWorker[] {
    if (this.workers !== undefined) return this.workers
    const domain = signatureDomain(this.swarm)
    const workers = Array.from({ length: this.size }, (): PoolWorker => {
      // The source is plain CommonJS: no loader hooks (tsx) to start in each worker.
      const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { domain } })
      const w: PoolWorker = { worker, pending: new Map(), load: 0 }
      worker.unref()
      worker.on('message', (m: { id: number; ok: Uint8Array }) => {
        const p = w.pending.get(m.id)
        if (p === undefined) return
        w.pending.delete(m.id)
        w.load -= p.jobs
        this.settled()
        p.resolve(m.ok)
      })
      worker.on('error', err => {
        failAll(w, err)
        this.settled()
      })
      worker.on('messageerror', err => {
        failAll(w, err)
        this.settled()
      })
      // Exited without an error (terminated, process.exit inside it): what it held is never answered.
      worker.on('exit', code => {
        failAll(w, new Error(`verify worker exited (code ${code})`))
        this.settled()
      })
      return w
    })
    this.workers = workers
    return workers
  }

  /** Workers keep the process alive only while they have work. */
  private settled(): void {
    if (!this.busy || (this.workers ?? []).some(w => w.pending.size > 0)) return
    this.busy = false
    for (const w of this.workers ?? []) w.worker.unref()
  }

  /** Jobs `from` to `to` in one buffer the worker can take over (transferred, not cloned). */
  private pack(jobs: readonly VerifyJob[], from: number, to: number): Packed {
    const n = to - from
    let bytes = 0
    for (let i = from; i < to; i++) bytes += (jobs[i] as VerifyJob).bytes.length
    const head = 12 * n
    const buf = new ArrayBuffer(head + bytes)
    const meta = new Uint32Array(buf, 0, 3 * n)
    const data = new Uint8Array(buf)
    const authors: string[] = []
    const raw: Uint8Array[] = []
    const index = new Map<string, number>()
    let at = head
    for (let k = 0; k < n; k++) {
      const j = jobs[from + k] as VerifyJob
      let a = index.get(j.author)
      if (a === undefined) {
        const key = ed25519KeyOf(j.author)
        a = key === null ? NO_KEY : authors.length
        if (key !== null) {
          authors.push(j.author)
          raw.push(key.raw.slice())
        }
        index.set(j.author, a)
      }
      meta[3 * k] = a
      meta[3 * k + 1] = at
      meta[3 * k + 2] = j.bytes.length
      data.set(j.bytes, at)
      at += j.bytes.length
    }
    return { id: this.nextId++, n, buf, authors, raw }
  }

  private async send(w: PoolWorker, packed: Packed): Promise<Uint8Array> {
    return await new Promise<Uint8Array>((resolve, reject) => {
      if (!this.busy) {
        this.busy = true
        for (const x of this.workers ?? []) x.worker.ref()
      }
      w.pending.set(packed.id, { jobs: packed.n, resolve, reject })
      w.load += packed.n
      w.worker.postMessage(packed, [packed.buf])
    })
  }
}

function leastBusy(workers: readonly PoolWorker[]): PoolWorker {
  let best = workers[0] as PoolWorker
  for (const w of workers) if (w.load < best.load) best = w
  return best
}

function failAll(w: PoolWorker, err: Error): void {
  const pending = [...w.pending.values()]
  w.pending.clear()
  w.load = 0
  for (const p of pending) p.reject(err)
}
