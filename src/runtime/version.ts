import pkg from '../../package.json' with { type: 'json' }

/** The release, from package.json alone: presence, `--version`, MCP's server info and traces all read it here. */
export const PACKAGE_VERSION: string = pkg.version

/** What a node announces in its presence and names itself as to MCP clients: `plan-swarm/<release>`. */
export const VERSION = `plan-swarm/${PACKAGE_VERSION}`
