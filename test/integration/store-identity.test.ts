import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateKeyPair, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import { afterEach, describe, expect, it } from 'vitest'
import { IDENTITY_FILE, loadOrCreateIdentity } from '../../src/store/identity.js'
import { removeTempDirs, tempDir } from '../helpers/store-temp.js'

afterEach(() => removeTempDirs())

function mode(path: string): number {
  return statSync(path).mode & 0o777
}

describe('identity', () => {
  it('is created once, private to the owner, and the same on every reopen', async () => {
    const dir = join(tempDir('identity'), 'nested', 'data')
    const first = await loadOrCreateIdentity(dir)
    expect(first.created).toBe(true)
    expect(first.peerId).toMatch(/^12D3KooW/)
    expect(first.privateKey.type).toBe('Ed25519')
    const path = join(dir, IDENTITY_FILE)
    expect(mode(path)).toBe(0o600)
    expect(mode(dir)).toBe(0o700)
    const bytes = readFileSync(path)

    const second = await loadOrCreateIdentity(dir)
    expect(second.created).toBe(false)
    expect(second.peerId).toBe(first.peerId)
    expect(second.privateKey.equals(first.privateKey)).toBe(true)
    expect(readFileSync(path).equals(bytes)).toBe(true)
    // No temp files left behind.
    expect(readdirSync(dir)).toEqual([IDENTITY_FILE])
  })

  it('gives concurrent creators one identity', async () => {
    const dir = tempDir('identity')
    const all = await Promise.all([1, 2, 3, 4].map(async () => loadOrCreateIdentity(dir)))
    expect(new Set(all.map(i => i.peerId)).size).toBe(1)
    expect(all.filter(i => i.created)).toHaveLength(1)
    expect(readdirSync(dir)).toEqual([IDENTITY_FILE])
  })

  it('refuses a malformed key file and leaves it untouched', async () => {
    const dir = tempDir('identity')
    const path = join(dir, IDENTITY_FILE)
    const junk = Buffer.from('definitely not a protobuf key\n')
    writeFileSync(path, junk)
    chmodSync(path, 0o644)
    const err = await loadOrCreateIdentity(dir).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(err).toMatchObject({ name: 'IdentityFileError', path })
    expect((err as Error).message).toContain(path)
    expect((err as Error).message).toMatch(/restore it from a backup, or delete it/)
    expect(readFileSync(path).equals(junk)).toBe(true)
    expect(mode(path)).toBe(0o644)

    writeFileSync(path, Buffer.alloc(0))
    await expect(loadOrCreateIdentity(dir)).rejects.toMatchObject({ name: 'IdentityFileError' })
    expect(readFileSync(path)).toHaveLength(0)
  })

  it('refuses a key that is not Ed25519', async () => {
    const dir = tempDir('identity')
    const path = join(dir, IDENTITY_FILE)
    const other = privateKeyToProtobuf(await generateKeyPair('secp256k1'))
    writeFileSync(path, other, { mode: 0o600 })
    await expect(loadOrCreateIdentity(dir)).rejects.toMatchObject({
      name: 'IdentityFileError',
      message: expect.stringMatching(/secp256k1.*Ed25519/)
    })
    expect(readFileSync(path).equals(Buffer.from(other))).toBe(true)
  })

  it('tightens a key file that others can read', async () => {
    const dir = tempDir('identity')
    const first = await loadOrCreateIdentity(dir)
    const path = join(dir, IDENTITY_FILE)
    chmodSync(path, 0o644)
    const again = await loadOrCreateIdentity(dir)
    expect(again.peerId).toBe(first.peerId)
    expect(mode(path)).toBe(0o600)
  })
})
