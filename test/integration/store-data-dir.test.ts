import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { acquireDefaultDataDir, LOCK_FILE, LOCK_PRAGMAS, lockDataDir, PID_FILE } from '../../src/store/data-dir.js'
import type { DataDirLock } from '../../src/store/data-dir.js'
import { killChildren, removeTempDirs, spawnStoreChild, tempDir } from '../helpers/store-temp.js'

const locks: DataDirLock[] = []

afterEach(async () => {
  for (const l of locks.splice(0)) l.release()
  await killChildren()
  removeTempDirs()
})

const isBusy = (line: string): boolean => line.startsWith('busy ')
const isLocked = (line: string): boolean => line.startsWith('locked ')
const isOutcome = (line: string): boolean => isBusy(line) || isLocked(line)

describe('data dir lock', () => {
  it('creates the dir private to the owner and excludes a second holder in this process', () => {
    const dir = join(tempDir('lock'), 'a', 'b')
    const lock = lockDataDir(dir)
    locks.push(lock)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(readFileSync(join(dir, PID_FILE), 'utf8').trim()).toBe(String(process.pid))
    expect(() => lockDataDir(dir)).toThrow(expect.objectContaining({ name: 'DataDirLockedError' }))
    // Same dir by another spelling.
    expect(() => lockDataDir(join(dir, '..', 'b'))).toThrow(expect.objectContaining({ name: 'DataDirLockedError' }))
    lock.release()
    lock.release()
    locks.push(lockDataDir(dir))
  })

  it('is not kept from a dir by a holder that has set up its connection but not yet taken the lock', () => {
    // Two processes starting together: the other one stopped between its pragmas and its BEGIN EXCLUSIVE.
    const dir = tempDir('lock')
    const other = new Database(join(dir, LOCK_FILE))
    try {
      for (const p of LOCK_PRAGMAS) other.pragma(p)
      const lock = lockDataDir(dir)
      locks.push(lock)
      // And the other one, going on, is refused: it moves on to the next dir.
      expect(() => other.exec('BEGIN EXCLUSIVE')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }))
    } finally {
      other.close()
    }
  })

  it('excludes another process, and frees the dir when its holder is SIGKILLed', async () => {
    const dir = tempDir('lock')

    // This process holds it: a child cannot take it, and is told who has it.
    const mine = lockDataDir(dir)
    locks.push(mine)
    const refused = await spawnStoreChild(['lock', dir]).waitForLine(isOutcome)
    expect(refused).toBe(
      `busy DataDirLockedError data dir ${dir} is in use by another plan-swarm process ` +
        `(pid ${process.pid}); stop it or pass --data-dir <another dir>`
    )
    mine.release()

    // A child holds it: this process cannot take it.
    const holder = spawnStoreChild(['lock', dir])
    expect(await holder.waitForLine(isOutcome)).toBe(`locked ${holder.pid}`)
    let err: unknown
    try {
      locks.push(lockDataDir(dir))
    } catch (e) {
      err = e
    }
    expect(err).toMatchObject({ name: 'DataDirLockedError', dir, pid: holder.pid })

    // Killed without any chance to clean up: the kernel drops its lock.
    await holder.kill()
    locks.push(lockDataDir(dir))
    const after = spawnStoreChild(['lock', dir])
    expect(await after.waitForLine(isOutcome)).toMatch(/^busy DataDirLockedError /)
  })

  it('stays held when its holder keeps no handle and the collector runs', async () => {
    const dir = tempDir('dropped')
    const holder = spawnStoreChild(['lock-dropped', dir])
    expect(await holder.waitForLine(l => l.startsWith('collected '))).toMatch(/^collected \d+/)
    const other = spawnStoreChild(['lock', dir])
    expect(await other.waitForLine(isOutcome)).toMatch(/^busy DataDirLockedError /)
  })

  it('says what to do when the lock file is not usable', () => {
    const dir = tempDir('lock')
    writeFileSync(join(dir, LOCK_FILE), 'garbage that is not a SQLite database, long enough to fill a header....')
    expect(() => lockDataDir(dir)).toThrow(
      expect.objectContaining({ name: 'DataDirLockFileError', message: expect.stringMatching(/delete that file/) })
    )
  })

  it('gives concurrent processes different default dirs and a restart the lowest free one', async () => {
    const base = join(tempDir('default'), 'swarm')
    const isAcquired = (line: string): boolean => line.startsWith('acquired ')
    const a = spawnStoreChild(['acquire', base, 'scorer'])
    const b = spawnStoreChild(['acquire', base, 'scorer'])
    const dirs = (await Promise.all([a.waitForLine(isAcquired), b.waitForLine(isAcquired)])).map(l =>
      l.slice('acquired '.length)
    )
    expect([...dirs].sort()).toEqual([join(base, 'scorer-1'), join(base, 'scorer-2')])

    // Another role has its own numbering; this process gets the next free dir.
    const other = acquireDefaultDataDir(base, 'executor')
    locks.push(other.lock)
    expect(other.dir).toBe(join(base, 'executor-1'))
    const third = acquireDefaultDataDir(base, 'scorer')
    locks.push(third.lock)
    expect(third.dir).toBe(join(base, 'scorer-3'))

    // The holder of scorer-1 dies; its restart gets scorer-1 back.
    const holderOf1 = dirs[0] === join(base, 'scorer-1') ? a : b
    await holderOf1.kill()
    const restarted = spawnStoreChild(['acquire', base, 'scorer'])
    expect(await restarted.waitForLine(isAcquired)).toBe(`acquired ${join(base, 'scorer-1')}`)
  })
})
