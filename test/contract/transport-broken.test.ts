/**
 * The contract's checks can fail: each transport broken on purpose
 * (./transport-broken.ts) fails the check that names its fault, with the
 * violation that check reports, on every implementation where the rule
 * applies; and on the simulator (where the whole contract takes a fraction
 * of a second) it fails no check but those its fault breaks, so the failure
 * is the fault's and not the harness's.
 */
import { describe, expect, it } from 'vitest'
import { ContractViolation, runTransportCheck, runTransportChecks, transportCheck } from './transport-contract.js'
import type { TransportSetup } from './transport-contract.js'
import { BROKEN_TRANSPORTS } from './transport-broken.js'
import { libp2pSetup, simSetup, wrappedSetup } from './transport-setups.js'

const SETUPS: ReadonlyArray<readonly [string, TransportSetup]> = [
  ['libp2p', libp2pSetup()],
  ['simulator', simSetup()]
]

describe('the Transport contract fails broken transports', () => {
  for (const broken of BROKEN_TRANSPORTS) {
    for (const [name, setup] of SETUPS) {
      const check = transportCheck(broken.fails)
      it.skipIf(check.needsScoring === true && !setup.scoresPeers)(
        `${name} that ${broken.name} fails "${broken.fails}"`,
        async () => {
          const result = await runTransportCheck(check, wrappedSetup(setup, broken.wrap))
          expect(result.ok).toBe(false)
          expect(result.error).toBeInstanceOf(ContractViolation)
          expect(result.error?.message).toMatch(broken.says)
        }
      )
    }
    it(`the simulator's transport that ${broken.name} fails no other check`, async () => {
      const sim = simSetup()
      const failed = (await runTransportChecks(wrappedSetup(sim, broken.wrap))).filter(r => !r.ok).map(r => r.name)
      const expected = [broken.fails, ...(broken.alsoFails ?? [])].filter(
        name => sim.scoresPeers || transportCheck(name).needsScoring !== true
      )
      expect(failed.sort()).toEqual(expected.sort())
    })
  }
})
