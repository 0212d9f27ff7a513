/**
 * Errors of a sync session. Sessions never throw them past `run`: each ends
 * the session and becomes the `error` string of its stats (name and
 * message), which logs, metrics and tests match on.
 */

/** A protocol violation by the peer (or a local limit it exceeded). */
export class SyncProtocolError extends Error {
  override readonly name = 'SyncProtocolError'
}

/** The session made no progress for too long, or ran past its hard deadline. */
export class SyncTimeoutError extends Error {
  override readonly name = 'SyncTimeoutError'
}

/** The session was stopped locally (service stopped, or the node is shutting down). */
export class SyncAbortedError extends Error {
  override readonly name = 'SyncAbortedError'
}

/** A memory stream pair was cut (the simulator's partition or crash): both ends fail with this. */
export class StreamCutError extends Error {
  override readonly name = 'StreamCutError'
}

/** An error as one line for stats and logs: `Name: message`, or the bare message of a plain Error. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.name !== 'Error' ? `${err.name}: ${err.message}` : err.message
  return String(err)
}

/** Anything thrown, as an Error. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err))
}
