/**
 * Errors shared across layers. A leaf module: it imports nothing of the
 * project, so the runtime's flag parsing and the author actions (which sit
 * above it and may not import it) throw the same class.
 */

/**
 * A bad command line, environment or plan parameter: the message says what
 * to change. The CLI maps it to exit code 2 by its `name`; the dashboard
 * answers it with 400.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
  readonly exitCode = 2
}
