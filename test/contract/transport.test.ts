/**
 * The Transport contract (./transport-contract.ts) over both implementations:
 * the libp2p shell with real nodes on 127.0.0.1, and the simulator's
 * transport on virtual time.
 */
import { runTransportContract } from './transport-contract.js'
import { libp2pSetup, simSetup } from './transport-setups.js'

runTransportContract('libp2p', libp2pSetup())
runTransportContract('simulator', simSetup())
