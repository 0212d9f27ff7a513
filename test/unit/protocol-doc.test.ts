/**
 * Keeps the protocol pages (docs/protocol/) true: every test vector of
 * vectors.md is checked against the code (decoded with the real decoder, its
 * id recomputed, its signature verified and re-made from the stated seed, the
 * fixture's treeHash, the reconciliation and sync frames rebuilt), the names
 * and constants the pages list are compared with the ones in src/, the
 * protocol versions they state with the ones the code folds, and the protocol
 * ids they name with the ones the code speaks. Every page opens with its
 * status, and every link between the pages lands on a heading. A byte changed
 * on a page, or a constant or version changed in the code, fails here.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { describe, expect, it } from 'vitest'
import { toHex } from '../../src/core/hash.js'
import { foldAll } from '../../src/core/fold.js'
import { FINGERPRINT_BYTES, IdSet } from '../../src/core/id-set.js'
import { MAX_CLAIM_WINDOW_MS, MAX_RETAIN_DAYS } from '../../src/core/limits.js'
import { TAKEOVER_GRACE_MS } from '../../src/core/trust-rules.js'
import { DEFAULT_RETAIN_DAYS } from '../../src/core/retention.js'
import { TOMBSTONE_KEEP_MS } from '../../src/runtime/retention.js'
import {
  MAX_CLOCK_AHEAD_MS,
  MAX_COMMITTEE,
  MAX_DEPS,
  MAX_EVENT_BYTES,
  MAX_SWARM_NAME_CHARS
} from '../../src/core/limits.js'
import { FOLDED_VERSIONS } from '../../src/core/events.js'
import type { Envelope, EventId } from '../../src/core/events.js'
import { MAX_PRESENCE_AGE_MS, MAX_PRESENCE_BYTES, presenceSignedMessage } from '../../src/net/presence.js'
import { ROSTER_EXCHANGE_MAX } from '../../src/net/roster-exchange.js'
import { FRAME_DONE, FRAME_RECONCILE, encodeEvents, encodeFrame, encodeWant } from '../../src/sync/frames.js'
import { MAX_OUTSTANDING_WANTS, MAX_WANT_IDS_PER_FRAME } from '../../src/sync/limits.js'
import { createReconcileSession, decodeReconcileMessage } from '../../src/sync/reconcile/index.js'
import {
  SIGNATURE_BYTES,
  SYNC_PROTOCOL,
  decodeEvent,
  encodeEnvelope,
  eventIdOf,
  eventsTopic,
  joinWire,
  presenceTopic,
  signatureDomain,
  signedMessage
} from '../../src/wire/index.js'
import * as topics from '../../src/wire/topics.js'
import { OPEN_IDS_PROTOCOL, PLAN_SUMMARY_PROTOCOL, ROSTER_PROTOCOL } from '../../src/wire/topics.js'

const ROOT = join(import.meta.dirname, '..', '..')
const DIR = join(ROOT, 'docs', 'protocol')
/** Every page of the protocol, by file name. */
const PAGES: ReadonlyMap<string, string> = new Map(
  readdirSync(DIR)
    .filter(name => name.endsWith('.md'))
    .sort()
    .map(name => [name, readFileSync(join(DIR, name), 'utf8')])
)

function page(name: string): string {
  const text = PAGES.get(name)
  if (text === undefined) throw new Error(`no page docs/protocol/${name}`)
  return text
}

const INDEX = page('README.md')
const VECTORS = page('vectors.md')
const GOLDEN = JSON.parse(readFileSync(new URL('../fixtures/golden-plan.json', import.meta.url), 'utf8')) as {
  readonly plan: string
  readonly treeHash: string
  readonly swarmHash: string
  readonly ids: readonly EventId[]
  readonly envelopes: readonly Envelope[]
}

type Fields = ReadonlyMap<string, string>

/**
 * The page's vectors: each a fenced block opened by a `vector name=<name>`
 * line, holding `key: value` lines; a value may go on over lines indented by
 * two spaces (long hex), which are joined.
 */
function parseVectors(page: string): Map<string, Fields> {
  const out = new Map<string, Fields>()
  for (const m of page.matchAll(/^```vector name=([a-z0-9-]+)\n([\s\S]*?)^```$/gm)) {
    const name = m[1] as string
    if (out.has(name)) throw new Error(`vector ${name} appears twice`)
    const fields = new Map<string, string>()
    let key: string | undefined
    for (const line of (m[2] as string).split('\n')) {
      if (line === '') continue
      const head = /^([a-z-]+):\s*(.*)$/.exec(line)
      if (head !== null) {
        key = head[1] as string
        if (fields.has(key)) throw new Error(`vector ${name}: ${key} twice`)
        fields.set(key, (head[2] as string).trim())
      } else if (line.startsWith('  ') && key !== undefined) {
        fields.set(key, (fields.get(key) as string) + line.trim())
      } else {
        throw new Error(`vector ${name}: cannot read line ${JSON.stringify(line)}`)
      }
    }
    out.set(name, fields)
  }
  return out
}

function field(v: Fields, key: string): string {
  const value = v.get(key)
  if (value === undefined) throw new Error(`missing field ${key}`)
  return value
}

function bytes(hex: string): Uint8Array {
  if (!/^([0-9a-f]{2})*$/.test(hex)) throw new Error(`not lowercase hex: ${hex.slice(0, 40)}`)
  return Uint8Array.from(hex.match(/../g) ?? [], b => parseInt(b, 16))
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** base58btc (Bitcoin alphabet, no multibase prefix), written out here as the page describes it. */
function base58btc(input: Uint8Array): string {
  const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
  let n = 0n
  for (const b of input) n = n * 256n + BigInt(b)
  let out = ''
  while (n > 0n) {
    out = (alphabet[Number(n % 58n)] as string) + out
    n /= 58n
  }
  for (const b of input) {
    if (b !== 0) break
    out = `1${out}`
  }
  return out
}

/** The text of the page's section that starts with `heading`, up to the next heading. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`)
  if (start < 0) throw new Error(`no section ${heading}`)
  const next = text.slice(start + heading.length + 2).search(/^#{1,3} /m)
  return next < 0 ? text.slice(start) : text.slice(start, start + heading.length + 2 + next)
}

/** The cells of each table row `| a | b | ... |` of the page's section that starts with `heading`. */
function tableRows(text: string, heading: string): string[][] {
  return [...section(text, heading).matchAll(/^\|(.*)\|$/gm)].map(m =>
    (m[1] as string).split('|').map(cell => cell.trim())
  )
}

/** The numbers of a list as prose writes it: "1, 2, 3 and 4", "1, 2, 3 or 4", "1, 2, 3, 4". */
function numbers(list: string): number[] {
  return list.split(/,\s*|\s+(?:and|or)\s+/).map(n => {
    if (!/^\d+$/.test(n)) throw new Error(`not a list of numbers: ${list}`)
    return Number(n)
  })
}

/** A header line `- <key>: <value>` among the lines that open a page, before its first section. */
function headerLine(text: string, key: string): string | undefined {
  const head = text.split(/^## /m)[0] as string
  return new RegExp(`^- ${key}: (.+)$`, 'm').exec(head)?.[1]
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')
}

const vectors = parseVectors(VECTORS)
const EVENT_TYPES_SHOWN = [
  'goal-submitted',
  'split-proposed',
  'ballot-cast',
  'task-claimed',
  'claim-renewed',
  'result-reported',
  'result-reviewed'
]

describe('docs/protocol/vectors.md: event vectors', () => {
  it('shows the event vectors it promises', () => {
    expect([...vectors.keys()].filter(n => vectors.get(n)?.has('envelope'))).toStrictEqual(EVENT_TYPES_SHOWN)
  })

  for (const name of EVENT_TYPES_SHOWN) {
    it(`${name}: the bytes decode, hash to the id and carry a valid signature`, async () => {
      const v = vectors.get(name) as Fields
      const envelope = bytes(field(v, 'envelope'))
      const signature = bytes(field(v, 'signature'))
      const id = field(v, 'id')
      const swarm = field(v, 'swarm')
      const index = Number(field(v, 'fixture-index'))

      // The bytes are the fixture's event, canonically encoded.
      const env = GOLDEN.envelopes[index] as Envelope
      expect(env.type).toBe(name)
      expect(toHex(encodeEnvelope(env))).toBe(toHex(envelope))
      expect(GOLDEN.ids[index]).toBe(id)

      // The real decoder takes them as they are and gives the fixture's envelope and the stated id.
      const decoded = decodeEvent(joinWire(envelope, signature), { swarm })
      expect(decoded.kind, decoded.kind === 'rejected' ? `${decoded.reason}: ${decoded.detail}` : '').toBe('event')
      if (decoded.kind !== 'event') return
      expect(decoded.event.id).toBe(id)
      expect(decoded.event.env).toEqual(env)
      expect(eventIdOf(envelope)).toBe(id)

      // The signature: domain prefix, key from the seed, peer id from the key by the page's rule.
      const domain = bytes(field(v, 'domain'))
      expect(toHex(signatureDomain(swarm))).toBe(toHex(domain))
      expect(new TextDecoder().decode(domain)).toBe(`plan-swarm/1/${swarm}\n`)
      const message = signedMessage(swarm, envelope)
      expect(toHex(message)).toBe(toHex(concat(domain, envelope)))
      const key = await generateKeyPairFromSeed('Ed25519', bytes(field(v, 'secret-seed')))
      const publicKey = bytes(field(v, 'public-key'))
      expect(toHex(key.publicKey.raw)).toBe(toHex(publicKey))
      expect(peerIdFromPrivateKey(key).toString()).toBe(field(v, 'author'))
      expect(base58btc(concat(Uint8Array.from([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]), publicKey))).toBe(
        field(v, 'author')
      )
      expect(env.author).toBe(field(v, 'author'))
      expect(signature.length).toBe(SIGNATURE_BYTES)
      expect(await key.publicKey.verify(message, signature)).toBe(true)
      expect(toHex(await key.sign(message))).toBe(toHex(signature))
    })
  }
})

describe('docs/protocol/vectors.md: the fold, reconciliation and frames', () => {
  const events = GOLDEN.envelopes.map(env => ({ id: eventIdOf(encodeEnvelope(env)), env }))

  it('the fixture folds to the treeHash and swarmHash the page states', () => {
    const v = vectors.get('golden-tree-hash') as Fields
    expect(field(v, 'plan')).toBe(GOLDEN.plan)
    expect(Number(field(v, 'events'))).toBe(events.length)
    const f = foldAll(events)
    expect(f.treeHash(GOLDEN.plan as never)).toBe(field(v, 'tree-hash'))
    expect(f.swarmHash()).toBe(field(v, 'swarm-hash'))
    expect(GOLDEN.treeHash).toBe(field(v, 'tree-hash'))
    expect(GOLDEN.swarmHash).toBe(field(v, 'swarm-hash'))
  })

  it('the fixture ids give the fingerprint and the opening message the page shows', () => {
    const set = new IdSet()
    for (const id of GOLDEN.ids) set.add(id)
    const fp = vectors.get('fingerprint-all') as Fields
    expect(Number(field(fp, 'ids'))).toBe(set.size)
    const snapshot = set.snapshot()
    expect(toHex(snapshot.fingerprintAt(0, snapshot.size))).toBe(field(fp, 'fingerprint'))
    const opening = vectors.get('reconcile-opening') as Fields
    expect(Number(field(opening, 'ids'))).toBe(set.size)
    const message = bytes(field(opening, 'message'))
    expect(toHex(createReconcileSession(set).initiate())).toBe(toHex(message))
    expect('error' in decodeReconcileMessage(message)).toBe(false)
    expect(page('sync.md')).toContain(
      `opens with \`${toHex(createReconcileSession(new IdSet()).initiate()).replace(/(..)(?!$)/g, '$1 ')}\``
    )
  })

  it('the sync frames are the ones the code writes', () => {
    const v = vectors.get('frames') as Fields
    const goal = vectors.get('goal-submitted') as Fields
    const goalId = field(goal, 'id')
    const wire = concat(bytes(field(goal, 'envelope')), bytes(field(goal, 'signature')))
    expect(toHex(encodeWant([goalId]))).toBe(field(v, 'want-goal'))
    expect(toHex(encodeFrame(FRAME_DONE))).toBe(field(v, 'done'))
    expect(toHex(encodeFrame(FRAME_RECONCILE))).toBe(field(v, 'reconcile-empty'))
    expect(toHex(encodeEvents(1, [wire]))).toBe(field(v, 'events-goal-head') + toHex(wire))
  })
})

describe('docs/protocol: names and constants', () => {
  it('lists the topics, protocol ids and signature prefixes of src/', () => {
    const shown = (s: string): string => s.replace(/\n/g, '\\n')
    const expected: Record<string, string> = {
      'events topic': eventsTopic('{swarm}'),
      'presence topic': presenceTopic('{swarm}'),
      'sync protocol': SYNC_PROTOCOL,
      'open-ids protocol': OPEN_IDS_PROTOCOL,
      'plan-summary protocol': PLAN_SUMMARY_PROTOCOL,
      'roster protocol': ROSTER_PROTOCOL,
      'event signature prefix': shown(new TextDecoder().decode(signatureDomain('{swarm}'))),
      'presence signature prefix': shown(new TextDecoder().decode(presenceSignedMessage('{swarm}', new Uint8Array(0))))
    }
    const rows = tableRows(INDEX, '## 3. Names').filter(([name]) => name !== 'Name' && !name?.startsWith('---'))
    expect(Object.fromEntries(rows.map(([name, value]) => [name, value?.replace(/^`|`$/g, '')]))).toStrictEqual(
      expected
    )
  })

  it('states the constants of src/', () => {
    const expected: Record<string, number> = {
      MAX_EVENT_BYTES,
      MAX_SWARM_NAME_CHARS,
      MAX_DEPS,
      MAX_COMMITTEE,
      MAX_CLOCK_AHEAD_MS,
      MAX_PRESENCE_BYTES,
      MAX_PRESENCE_AGE_MS,
      ROSTER_EXCHANGE_MAX,
      MAX_WANT_IDS_PER_FRAME,
      MAX_OUTSTANDING_WANTS,
      FINGERPRINT_BYTES,
      SIGNATURE_BYTES,
      MAX_RETAIN_DAYS,
      DEFAULT_RETAIN_DAYS,
      TOMBSTONE_KEEP_MS,
      MAX_CLAIM_WINDOW_MS,
      TAKEOVER_GRACE_MS
    }
    const rows = tableRows(VECTORS, '## 2. Constants').filter(([name]) => name?.startsWith('`'))
    expect(Object.fromEntries(rows.map(([name, value]) => [name?.replace(/`/g, ''), Number(value)]))).toStrictEqual(
      expected
    )
  })
})

describe('docs/protocol: versions, protocol ids, headers and links', () => {
  it('states the protocol versions the code folds', () => {
    const folded = headerLine(INDEX, 'Folded versions')
    expect(folded, 'README.md opens with a "- Folded versions: ..." line').toBeDefined()
    expect(numbers(folded as string)).toStrictEqual([...FOLDED_VERSIONS])
    const table = tableRows(INDEX, '## 2. Protocol versions').filter(([v]) => /^\d+$/.test(v ?? ''))
    expect(table.map(([v]) => Number(v))).toStrictEqual([...FOLDED_VERSIONS])
    const envelope = /^\| `v` \| uint \| protocol version; ([^;|]+?) are folded,/m.exec(page('events.md'))
    expect(envelope, "events.md's envelope table says which versions are folded").not.toBeNull()
    expect(numbers((envelope as RegExpExecArray)[1] as string)).toStrictEqual([...FOLDED_VERSIONS])
    const received = /^\| `v` is not ([^:|]+): kept and relayed, not folded/m.exec(page('encoding.md'))
    expect(received, "encoding.md's receiver table says which versions are folded").not.toBeNull()
    expect(numbers((received as RegExpExecArray)[1] as string)).toStrictEqual([...FOLDED_VERSIONS])
    for (const [name, text] of PAGES) {
      const covered = headerLine(text, 'Protocol versions')
      if (covered === undefined) continue
      const list = /^[\d, ]*\d/.exec(covered)?.[0] ?? ''
      expect(
        numbers(list).filter(v => !FOLDED_VERSIONS.includes(v)),
        `${name}: versions the code does not fold`
      ).toEqual([])
    }
  })

  it('names every protocol id of src/wire/topics.ts, and only protocol ids of src/', () => {
    const fromTopics = new Set<string>([eventsTopic('{swarm}'), presenceTopic('{swarm}')])
    for (const value of Object.values(topics))
      if (typeof value === 'string' && value.startsWith('/plan-swarm/')) fromTopics.add(value)
    const sources = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter(file => file.endsWith('.ts'))
      .map(file => readFileSync(join(ROOT, 'src', file), 'utf8'))
    const literals = new Set(
      sources.flatMap(text => [...text.matchAll(/(['"])(\/plan-swarm\/[^'"\s]+)\1/g)].map(m => m[2] as string))
    )
    const named = new Set<string>()
    for (const [name, text] of PAGES) {
      for (const m of text.matchAll(/\/plan-swarm\/[^\s`'"(),;|\]]+/g)) {
        const id = m[0].replace(/[.:]+$/, '')
        named.add(id)
        expect(fromTopics.has(id) || literals.has(id), `${name} names ${id}, which src/ does not define`).toBe(true)
      }
    }
    expect(
      [...fromTopics].filter(id => !named.has(id)),
      'protocol ids of src/wire/topics.ts no page names'
    ).toEqual([])
  })

  it('opens every page with its status and the versions it covers', () => {
    expect([...PAGES.keys()]).toContain('README.md')
    for (const [name, text] of PAGES) {
      expect(text.startsWith('# '), `${name} starts with its title`).toBe(true)
      expect(headerLine(text, 'Status'), `${name} opens with a "- Status: ..." line`).toMatch(/\S/)
      const versions = headerLine(text, name === 'README.md' ? 'Folded versions' : 'Protocol versions')
      expect(versions, `${name} opens with the protocol versions it covers`).toMatch(/^\d/)
    }
  })

  it('lists every page in the index, and every link between the pages lands on a heading', () => {
    const listed = [...section(INDEX, '## 1. Pages').matchAll(/\]\(([a-z-]+\.md)\)/g)].map(m => m[1] as string)
    expect([...listed].sort()).toStrictEqual([...PAGES.keys()].filter(name => name !== 'README.md').sort())
    const anchors = new Map(
      [...PAGES].map(([name, text]) => [
        name,
        new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map(m => anchorOf(m[1] as string)))
      ])
    )
    for (const [name, text] of PAGES) {
      for (const m of text.matchAll(/\]\(([^)\s]*)\)/g)) {
        const target = m[1] as string
        if (/^[a-z]+:/.test(target)) continue
        const [file, anchor] = target.split('#') as [string, string | undefined]
        if (file.startsWith('../')) {
          expect(existsSync(join(DIR, file)), `${name} links to ${target}: no such file`).toBe(true)
          continue
        }
        const into = file === '' ? name : file
        expect(anchors.has(into), `${name} links to ${target}: no page ${into}`).toBe(true)
        if (anchor !== undefined)
          expect(anchors.get(into)?.has(anchor), `${name} links to ${target}: no such heading`).toBe(true)
      }
    }
  })
})
