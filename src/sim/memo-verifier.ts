import { createHash } from 'node:crypto'
import { createNativeVerifier } from '../runtime/verify.js'
import type { SignatureVerifier } from '../wire/decode.js'

/**
 * Signature checks shared by every node of a world: a signature is a pure
 * function of its bytes, so one check per distinct (author, message,
 * signature) serves all thousand replicas that receive the same event.
 */
export function memoizedVerifier(): SignatureVerifier {
  const inner = createNativeVerifier()
  const memo = new Map<string, boolean>()
  return (author, publicKey, message, signature) => {
    const key = `${author}:${createHash('sha256').update(signature).update(message).digest('hex')}`
    let ok = memo.get(key)
    if (ok === undefined) {
      ok = inner(author, publicKey, message, signature)
      memo.set(key, ok)
    }
    return ok
  }
}
