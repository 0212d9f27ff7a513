/**
 * Errors shared across layers. A leaf module: it imports nothing of the
 * project, so the runtime's flag parsing and the author actions throw the
 * same class without either importing the other.
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
