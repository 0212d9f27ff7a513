import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import type { PlanTree } from './tree.js'

/**
 * The hash of the canonical encoding of a folded tree. Equal event sets give
 * equal trees and so equal hashes: it is what replicas, tests and operators
 * compare.
 *
 * Canonical encoding: JSON. Every object in a PlanTree is built by one
 * object literal in derive.ts, so its keys always come in the same order;
 * every value is a string, a boolean, null, a safe integer or an array in a
 * deterministic order. So JSON.stringify gives the same bytes for equal
 * trees on every replica, at a fraction of the cost of a DAG-CBOR encoding
 * (which sorts keys at every level). A change to the tree's shape changes
 * the hashes: it is a protocol change, and the golden test says so.
 */
export function treeHash (tree: PlanTree): string {
  return bytesToHex(sha256(utf8ToBytes(JSON.stringify(tree))))
}
