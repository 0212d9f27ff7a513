/**
 * Swarm keys: the pre-shared key of a libp2p private network (pnet).
 *
 * Every connection of a swarm started with `--swarm-key` is wrapped in an
 * XSalsa20 stream keyed by it, so a node without the key cannot even finish
 * the handshake. The file format is the one go-ipfs and js-libp2p share:
 *
 *     /key/swarm/psk/1.0.0/
 *     /base16/
 *     <64 hex digits>
 */
import { randomBytes } from 'node:crypto'
import { SwarmKeyError } from './errors.js'

const HEADER = '/key/swarm/psk/1.0.0/'
const CODEC = '/base16/'
/** A pnet key is 32 bytes (64 hex digits). */
export const SWARM_KEY_BYTES = 32
/** Anything much longer than the three lines is not a key file. */
const MAX_SWARM_KEY_FILE_CHARS = 1024
const HEX_KEY = new RegExp(`^[0-9a-fA-F]{${SWARM_KEY_BYTES * 2}}$`)

/** A fresh random swarm key, as the text of a key file (share it with every member of the swarm). */
export function generateSwarmKey(): string {
  return `${HEADER}\n${CODEC}\n${randomBytes(SWARM_KEY_BYTES).toString('hex')}\n`
}

/**
 * Checks a key file's text and returns the bytes to hand to
 * `createSwarmNode({ swarmKey })`: the file in its normal form (LF line
 * ends, lowercase hex, no trailing blank lines), so two spellings of one key
 * give identical bytes.
 * @throws SwarmKeyError naming what is wrong with the file.
 */
export function parseSwarmKey(text: string): Uint8Array {
  if (text.length > MAX_SWARM_KEY_FILE_CHARS) throw new SwarmKeyError(`it is ${text.length} characters long`)
  const lines = text
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/)
    .map(l => l.trim())
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  if (lines.length !== 3) throw new SwarmKeyError(`it has ${lines.length} lines, not 3`)
  const [header, codec, key] = lines as [string, string, string]
  if (header !== HEADER)
    throw new SwarmKeyError(`the first line is ${JSON.stringify(header.slice(0, 40))}, not "${HEADER}"`)
  if (codec !== CODEC)
    throw new SwarmKeyError(
      `the second line is ${JSON.stringify(codec.slice(0, 40))}, not "${CODEC}" (only base16 keys are supported)`
    )
  if (!HEX_KEY.test(key))
    throw new SwarmKeyError(
      `the key line has ${key.length} characters; it must be exactly ${SWARM_KEY_BYTES * 2} hex digits`
    )
  return new TextEncoder().encode(`${HEADER}\n${CODEC}\n${key.toLowerCase()}`)
}
