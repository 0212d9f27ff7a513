import { createPublicKey, verify } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { logger } from '@libp2p/logger'
import { splitWire, signedMessage } from '../wire/codec.js'
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
 * createNativeVerifier, on inputs the pool prepares (raw key, signed message,
 * signature). Plain JavaScript evaluated by the Worker, so it runs the same
 * under tsx, vitest and built code, with no file to find.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
const { createPublicKey, verify } = require('node:crypto')
const SPKI = Buffer.from('${Buffer.from(SPKI_ED25519).toString('hex')}', 'hex')
const keys = new Map()
parentPort.on('message', m => {
  const ok = new Uint8Array(m.messages.length)
  for (let i = 0; i < ok.length; i++) {
    try {
      let key = keys.get(m.authors[i])
      if (key === undefined) {
        key = createPublicKey({ key: Buffer.concat([SPKI, m.keys[i]]), format: 'der', type: 'spki' })
        if (keys.size >= ${KEY_CACHE_SIZE}) keys.clear()
        keys.set(m.authors[i], key)
      }
      ok[i] = verify(null, m.messages[i], key, m.signatures[i]) ? 1 : 0
    } catch { ok[i] = 0 }
  }
  parentPort.postMessage({ id: m.id, ok }, [ok.buffer])
})
`

export interface VerifyJob {
  readonly author: string
  readonly bytes: Uint8Array
}

interface Pending {
  resolve: (ok: Uint8Array) => void
  reject: (err: Error) => void
}

/** Below this many signatures a batch is checked on the calling thread: a round trip to a worker costs more. */
export const MIN_POOL_BATCH = 64

/**
 * Signature checks on worker threads, for batches (a sync round brings
 * thousands of events; gossip brings them one at a time and is checked
 * inline). A batch is cut into one share per worker; the shares are checked
 * in parallel while the main thread goes on with the network. Workers start
 * on first use and stop with `close`.
 */
export class VerifyPool {
  private workers: Worker[] | undefined
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  private readonly inline = createNativeVerifier()
  private broken = false
  /** Signatures checked on workers, and on the calling thread. */
  readonly checked = { workers: 0, inline: 0 }

  constructor(
    private readonly swarm: string,
    private readonly size = Math.max(1, Math.min(4, availableParallelism()))
  ) {}

  /** One flag per job, in order: true when its signature checks out. */
  async verifyMany(jobs: readonly VerifyJob[]): Promise<boolean[]> {
    if (jobs.length < MIN_POOL_BATCH || this.broken) return this.checkInline(jobs)
    const workers = this.start()
    const share = Math.ceil(jobs.length / workers.length)
    const parts: Array<Promise<Uint8Array>> = []
    for (let w = 0; w < workers.length && w * share < jobs.length; w++) {
      const slice = jobs.slice(w * share, (w + 1) * share)
      parts.push(this.send(workers[w] as Worker, slice))
    }
    try {
      const flags = await Promise.all(parts)
      const out: boolean[] = []
      for (const f of flags) for (const x of f) out.push(x === 1)
      this.checked.workers += out.length
      return out
    } catch (err) {
      // A worker that died is not a reason to drop events: check them here instead.
      log.error('verify worker failed (%s): checking signatures on the main thread from now on', (err as Error).message)
      this.broken = true
      await this.close()
      return this.checkInline(jobs)
    }
  }

  private checkInline(jobs: readonly VerifyJob[]): boolean[] {
    this.checked.inline += jobs.length
    return jobs.map(j => checkWireSignature(this.inline, this.swarm, j.author, j.bytes))
  }

  async close(): Promise<void> {
    const workers = this.workers ?? []
    this.workers = undefined
    for (const p of this.pending.values()) p.reject(new Error('verify pool closed'))
    this.pending.clear()
    await Promise.all(workers.map(async w => w.terminate()))
  }

  private start(): Worker[] {
    if (this.workers !== undefined) return this.workers
    this.workers = Array.from({ length: this.size }, () => {
      const w = new Worker(WORKER_SOURCE, { eval: true })
      w.unref()
      w.on('message', (m: { id: number; ok: Uint8Array }) => {
        const p = this.pending.get(m.id)
        this.pending.delete(m.id)
        if (this.pending.size === 0) this.hold(false)
        p?.resolve(m.ok)
      })
      w.on('error', err => {
        for (const p of this.pending.values()) p.reject(err)
      })
      return w
    })
    return this.workers
  }

  /** Workers keep the process alive only while they have work. */
  private hold(busy: boolean): void {
    for (const w of this.workers ?? []) {
      if (busy) w.ref()
      else w.unref()
    }
  }

  private async send(w: Worker, jobs: readonly VerifyJob[]): Promise<Uint8Array> {
    const id = this.nextId++
    const authors: string[] = []
    const keys: Uint8Array[] = []
    const messages: Uint8Array[] = []
    const signatures: Uint8Array[] = []
    for (const j of jobs) {
      const parts = splitWire(j.bytes)
      const key = ed25519KeyOf(j.author)
      authors.push(j.author)
      // Nothing to check the worker with: an empty key fails the check there.
      keys.push(key?.raw ?? new Uint8Array(0))
      messages.push(parts === null ? new Uint8Array(0) : signedMessage(this.swarm, parts.envelopeBytes))
      signatures.push(parts?.signature ?? new Uint8Array(0))
    }
    return await new Promise<Uint8Array>((resolve, reject) => {
      if (this.pending.size === 0) this.hold(true)
      this.pending.set(id, { resolve, reject })
      w.postMessage({ id, authors, keys, messages, signatures })
    })
  }
}
