/**
 * bench load --profile: a frame's group comes from the first rule its source matches, a helper marked `inherit` or a
 * frame no rule matches takes its caller's, and only the samples inside a phase's window count.
 */
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { normalPath, ruleGroup } from '../../bench/load/profile-groups.js'
import { analyseProfiles } from '../../bench/load/profile.js'

describe('profile groups', () => {
  it('maps sources to groups, narrower rules first', () => {
    expect(ruleGroup('src/runtime/verify.ts', 'x')).toBe('signature verify')
    expect(ruleGroup('src/wire/decode.ts', 'decodeEvent')).toBe('decode')
    expect(ruleGroup('src/core/fold.ts', 'add')).toBe('fold')
    expect(ruleGroup('src/core/derive.ts', 'derivePlan')).toBe('inherit')
    expect(ruleGroup('node_modules/@libp2p/gossipsub/src/gossipsub.ts', 'f')).toBe('gossipsub and its validators')
    expect(ruleGroup('node_modules/@libp2p/tcp/src/socket-to-conn.ts', 'f')).toBe('libp2p streams and transport')
    expect(ruleGroup('roles/executor.ts', 'f')).toBe('decide (roles)')
    expect(ruleGroup('(native)', '(garbage collector)')).toBe('GC')
    expect(ruleGroup('node:internal/process/task_queues', 'runMicrotasks')).toBeUndefined()
  })

  it('reads paths from the bundle, the sources and nested packages alike', () => {
    expect(normalPath('file:///work/x/dist/src/core/fold.ts')).toBe('src/core/fold.ts')
    expect(normalPath('file:///work/x/roles/executor.ts')).toBe('roles/executor.ts')
    expect(normalPath('/a/node_modules/b/node_modules/cborg/lib/x.js')).toBe('node_modules/cborg/lib/x.js')
    expect(normalPath('node:internal/crypto/sig')).toBe('node:internal/crypto/sig')
  })

  it('gives a frame its caller group when no rule or an inherit rule matches, within the window only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'))
    mkdirSync(join(dir, 'e1'))
    const frame = (id: number, url: string, functionName: string, children: number[] = []) => ({
      id,
      callFrame: { functionName, url, lineNumber: 0, columnNumber: 0, scriptId: '0' },
      children
    })
    const nodes = [
      frame(1, '', '(root)', [2, 5, 6]),
      frame(2, 'file:///r/src/core/fold.ts', 'add', [3]),
      frame(3, 'file:///r/src/core/derive.ts', 'derivePlan', [4]),
      frame(4, '', 'hashNative'),
      frame(5, 'file:///r/roles/executor.ts', 'decide', [7]),
      frame(6, '', '(idle)'),
      frame(7, 'file:///r/src/core/derive.ts', 'derivePlan')
    ]
    // Samples 1 ms apart from t = 1000 µs: 4 (fold, through derive), 7 (roles, through derive), 6 (idle), then 2 outside.
    const samples = [4, 4, 7, 6, 2, 2]
    const profile = { nodes, startTime: 0, endTime: 7000, samples, timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000] }
    writeFileSync(join(dir, 'e1', 'CPU.1.cpuprofile'), JSON.stringify(profile))
    const [row] = analyseProfiles(dir, [{ phase: 'p', fromUs: 1000, toUs: 4500, events: { e1: 3 }, cpuMs: { e1: 6 } }])
    expect(row?.groupsPct.fold).toBeCloseTo(66.7, 1)
    expect(row?.groupsPct['decide (roles)']).toBeCloseTo(33.3, 1)
    expect(row?.idlePctOfSampled).toBe(25)
    expect(row?.cpuMsPerEvent).toBe(2)
    expect(row?.groupsMsPerEvent.fold).toBeCloseTo(1.333, 3)
  })
})
