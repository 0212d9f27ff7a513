import * as dagCbor from '@ipld/dag-cbor'
import { sha256Hex } from './hash.js'
import type { PlanTree } from './tree.js'

/**
 * The hash of the canonical encoding of a folded tree. Equal event sets give
 * equal trees and so equal hashes: it is what replicas, tests and operators
 * compare.
 */
export function treeHash (tree: PlanTree): string {
  return sha256Hex(dagCbor.encode(tree))
}
