/**
 * Peer allowlists: the optional second admission gate after the swarm key.
 *
 * The file lists the peer ids that may connect, one per line; `#` starts a
 * comment, blank lines are skipped. Only canonical Ed25519 peer ids are
 * accepted, the same ones that may author events, so a typo is caught when
 * the file is read rather than showing up as a peer that can never connect.
 */
import { isEd25519PeerIdString } from '../wire/peer-keys.js'
import { AllowListError } from './errors.js'

/** More lines than this is not a hand-kept allowlist. */
export const MAX_ALLOW_LIST_LINES = 100_000

/**
 * Parses an allowlist file's text into a set of peer id strings.
 * @throws AllowListError naming the first line that is not a peer id.
 */
export function parseAllowList(text: string): ReadonlySet<string> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)
  if (lines.length > MAX_ALLOW_LIST_LINES)
    throw new AllowListError(MAX_ALLOW_LIST_LINES + 1, `the file has more than ${MAX_ALLOW_LIST_LINES} lines`)
  const peers = new Set<string>()
  lines.forEach((raw, i) => {
    const hash = raw.indexOf('#')
    const entry = (hash === -1 ? raw : raw.slice(0, hash)).trim()
    if (entry === '') return
    if (/\s/.test(entry))
      throw new AllowListError(i + 1, `${JSON.stringify(entry.slice(0, 80))} has more than one word`)
    if (!isEd25519PeerIdString(entry))
      throw new AllowListError(i + 1, `${JSON.stringify(entry.slice(0, 80))} is not an Ed25519 peer id`)
    peers.add(entry)
  })
  return peers
}
