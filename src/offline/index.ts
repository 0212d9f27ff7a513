/**
 * The offline layer: deterministic heuristics that stand in for a model when
 * none is configured (no network, no randomness: every node that runs them
 * answers alike). What the composition roots and tests import; provider.ts
 * says what the provider promises.
 */
export { createOfflineProvider, OFFLINE_BANNER, OFFLINE_MODEL } from './provider.js'
export { OFFLINE_OUTPUT_PREFIX } from './execute.js'
export { knownAngle } from './decompose.js'
