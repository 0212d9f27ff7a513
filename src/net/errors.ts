/**
 * Errors the network shell raises. One class per condition, each with a stable
 * `name` that callers and tests match on, and a message that tells the user
 * what to do about it.
 */

/** A swarm key file (`--swarm-key`) is not in the pnet PSK format. */
export class SwarmKeyError extends Error {
  override readonly name = 'SwarmKeyError'

  constructor(problem: string) {
    super(
      `swarm key file is malformed: ${problem}; expected three lines "/key/swarm/psk/1.0.0/", ` +
        `"/base16/" and 64 hex digits (make one with generateSwarmKey or \`plan-swarm keygen\`)`
    )
  }
}

/** A peer allowlist file has a line that is not a peer id. */
export class AllowListError extends Error {
  override readonly name = 'AllowListError'
  /** 1-based line number of the offending line. */
  readonly line: number

  constructor(line: number, problem: string) {
    super(
      `peer allowlist line ${line}: ${problem}; put one Ed25519 peer id (12D3KooW...) per line, "#" starts a comment`
    )
    this.line = line
  }
}

/**
 * `publishEvent` was handed bytes that peers would reject: an id that is not
 * the hash of the envelope part, or an oversized event. A bug in the caller,
 * which must publish only the bytes the signer produced.
 */
export class InvalidPublishError extends Error {
  override readonly name = 'InvalidPublishError'

  constructor(problem: string) {
    super(`refusing to publish: ${problem}; publish only the id and wire bytes returned by signEvent`)
  }
}

/** An option of createSwarmNode is out of range or inconsistent. */
export class SwarmNodeConfigError extends Error {
  override readonly name = 'SwarmNodeConfigError'

  constructor(problem: string) {
    super(`invalid network configuration: ${problem}`)
  }
}

/** A method was called on a node after `stop()`. */
export class SwarmNodeStoppedError extends Error {
  override readonly name = 'SwarmNodeStoppedError'

  constructor(what: string) {
    super(`cannot ${what}: the swarm node has been stopped; create a new node to rejoin the swarm`)
  }
}
