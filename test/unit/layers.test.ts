import { readdirSync, readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  ARCHITECTURE_DOC,
  LAYERED_ROOTS,
  LAYERS,
  TABLE_END,
  TABLE_START,
  isLayered,
  layerOf,
  renderLayerTable,
  unplacedName,
  withLayerTable
} from '../../scripts/layers.js'

const ROOT = new URL('../../', import.meta.url)
const ROOT_DIR = fileURLToPath(ROOT)

/** Every file under a folder of the repository, as repository-relative paths. */
function filesUnder(dir: string): string[] {
  return readdirSync(new URL(dir, ROOT), { recursive: true, withFileTypes: true })
    .filter(e => e.isFile())
    .map(e => relative(ROOT_DIR, `${e.parentPath}/${e.name}`).replaceAll('\\', '/'))
}

describe('the layers of scripts/layers.js', () => {
  it('docs/architecture.md carries the table the module renders (npm run docs:layers writes it)', () => {
    const doc = readFileSync(ARCHITECTURE_DOC, 'utf8')
    const table = doc.slice(doc.indexOf(TABLE_START) + TABLE_START.length, doc.indexOf(TABLE_END)).trim()
    expect(table).toBe(renderLayerTable())
    expect(withLayerTable(doc)).toBe(doc)
  })

  it('every folder and file directly under src/ is in a layer', () => {
    const unplaced = readdirSync(new URL('src', ROOT))
      .map(name => `src/${name}`)
      .filter(p => layerOf(p) === undefined)
    expect(unplaced, 'place these in scripts/layers.js').toEqual([])
  })

  it('every source file under src/ and roles/ is in a layer', () => {
    const unplaced = LAYERED_ROOTS.flatMap(filesUnder).filter(p => /\.[jt]s$/.test(p) && layerOf(p) === undefined)
    expect(unplaced.map(unplacedName), 'place these in scripts/layers.js').toEqual([])
  })

  it('every layer covers something that exists', () => {
    const present = new Set(LAYERED_ROOTS.flatMap(filesUnder).map(p => layerOf(p)?.name))
    expect(LAYERS.map(l => l.name).filter(n => !present.has(n))).toEqual([])
  })

  it('matches an import specifier of a file layer with either extension, and folders by prefix only', () => {
    expect(layerOf('src/errors.js')?.name).toBe('src/errors.ts')
    expect(layerOf('src/core/fold.ts')?.name).toBe('src/core')
    expect(layerOf('src/corex/fold.ts')).toBeUndefined()
    expect(layerOf('roles/scorer.ts')?.name).toBe('roles')
    expect(isLayered('scripts/layers.js')).toBe(false)
    expect(unplacedName('src/newthing/a/b.ts')).toBe('src/newthing')
  })
})
