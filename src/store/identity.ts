/**
 * A node's long-lived identity: the Ed25519 key its peer id comes from, kept
 * in `<data dir>/identity.key`.
 *
 * The peer id is how the swarm knows a node: committees list scorers by it,
 * and only a goal's author (by its key) may cancel or amend the goal. So an
 * existing identity is never replaced behind the user's back: a key file that
 * cannot be read is an error, not a reason to mint a new one.
 */
import { randomBytes } from 'node:crypto'
import { chmod, link, open, readFile, rename, stat as statFile, unlink } from 'node:fs/promises'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'
import { logger } from '@libp2p/logger'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { IdentityFileError } from './errors.js'

const log = logger('plan-swarm:store')

/** The key file's name inside a data dir. */
export const IDENTITY_FILE = 'identity.key'

/** Owner read/write only: the file is the node's private key. */
const KEY_FILE_MODE = 0o600

/** A protobuf-encoded Ed25519 private key is 68 bytes; anything much larger is not ours. */
const MAX_KEY_FILE_BYTES = 64 * 1024

export interface Identity {
  readonly privateKey: PrivateKey
  /** The peer id string (`12D3KooW...`). */
  readonly peerId: string
  /** True when this call generated the key (first start with this data dir). */
  readonly created: boolean
}

/**
 * Loads the node's key from `<dir>/identity.key`, or creates one if the file
 * does not exist.
 *
 * Creation writes a temporary file (mode 0600, fsynced) and links it into
 * place, which is atomic and fails if the file appeared meanwhile: a reader
 * never sees a half-written key, and a concurrent creator's key is adopted,
 * never overwritten. A key file readable by group or others is tightened to
 * 0600.
 * @throws IdentityFileError if the file exists but is not a protobuf Ed25519
 *   private key (the file is left untouched).
 */
export async function loadOrCreateIdentity(dir: string): Promise<Identity> {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const path = join(dir, IDENTITY_FILE)

  const existing = await readIdentity(path)
  if (existing !== undefined) return existing

  const privateKey = await generateKeyPair('Ed25519')
  const adopted = await writeNew(path, privateKeyToProtobuf(privateKey))
  if (adopted) {
    // Another process created the file between our read and our write.
    const other = await readIdentity(path)
    if (other !== undefined) return other
    throw new IdentityFileError(path, 'vanished while it was being created')
  }
  const peerId = peerIdFromPrivateKey(privateKey).toString()
  log('created identity %s in %s', peerId, path)
  return { privateKey, peerId, created: true }
}

/** The identity in `path`, or undefined if there is no such file. */
async function readIdentity(path: string): Promise<Identity | undefined> {
  let stat
  try {
    stat = await statFile(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new IdentityFileError(path, `cannot be read (${(err as Error).message})`, { cause: err })
  }
  if (!stat.isFile()) throw new IdentityFileError(path, 'is not a regular file')
  if (stat.size > MAX_KEY_FILE_BYTES)
    throw new IdentityFileError(path, `is ${stat.size} bytes, far too large to be a key`)

  let bytes: Uint8Array
  try {
    bytes = await readFile(path)
  } catch (err) {
    throw new IdentityFileError(path, `cannot be read (${(err as Error).message})`, { cause: err })
  }
  let privateKey: PrivateKey
  try {
    privateKey = privateKeyFromProtobuf(bytes)
  } catch (err) {
    throw new IdentityFileError(path, `is not a protobuf private key (${(err as Error).message})`, { cause: err })
  }
  if (privateKey.type !== 'Ed25519') {
    throw new IdentityFileError(path, `holds a ${privateKey.type} key, but plan-swarm peers sign with Ed25519`)
  }
  // Only a good key is worth protecting; a bad file is left exactly as it was.
  if ((stat.mode & 0o077) !== 0) {
    await chmod(path, KEY_FILE_MODE)
    log.error(
      '%s was readable by group or others (mode %s); tightened it to 0600',
      path,
      (stat.mode & 0o777).toString(8).padStart(4, '0')
    )
  }
  return { privateKey, peerId: peerIdFromPrivateKey(privateKey).toString(), created: false }
}

/**
 * Writes `bytes` to `path` atomically unless `path` exists. Returns true if
 * the file already existed (nothing was written).
 */
async function writeNew(path: string, bytes: Uint8Array): Promise<boolean> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
  const handle = await open(tmp, 'wx', KEY_FILE_MODE)
  try {
    try {
      await handle.writeFile(bytes)
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      // link() is atomic and, unlike rename(), refuses to replace a file.
      await link(tmp, path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EEXIST') return true
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') throw err
      // A file system without hard links: fall back to rename, which is
      // still atomic; we checked just before that no identity existed.
      await rename(tmp, path)
      return false
    }
    await syncDir(path)
    return false
  } finally {
    await unlink(tmp).catch(() => {})
  }
}

/** Makes the new directory entry durable (best effort: some platforms cannot open a directory). */
async function syncDir(path: string): Promise<void> {
  const dir = join(path, '..')
  try {
    const handle = await open(dir, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch {
    // Durability of the entry is a nicety; the file itself is already synced.
  }
}
