import './polyfill.js'
import { COMMANDS, ConfigError, helpText, parseNodeArgs } from './runtime/config.js'
import { VERSION } from './runtime/version.js'
import { generateSwarmKey } from './net/swarm-key.js'
import { writeFileSync } from 'node:fs'

/**
 * `npm start -- ...`: argument parsing and dispatch only. Every failure the
 * user can fix ends with a message saying how, and a documented exit code.
 */
const CLIENT_COMMANDS: Record<string, 'submit' | 'cancel' | 'amend' | 'raiseBudget' | 'retry' | 'exportPlan'> = {
  export: 'exportPlan',
  submit: 'submit',
  cancel: 'cancel',
  amend: 'amend',
  'raise-budget': 'raiseBudget',
  retry: 'retry'
}

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  const known = COMMANDS.some(c => c.name === command)
  if (known && (rest.includes('--help') || rest.includes('-h'))) {
    console.log(helpText())
    return 0
  }
  if (command === 'keygen') return keygen(rest)
  if (command === 'mcp') {
    const { runMcp } = await import('./app/run-mcp.js')
    return await runMcp(rest)
  }
  if (command === 'id' || command === 'inbox' || command === 'vote' || command === 'review') {
    const person = await import('./commands/person.js')
    return await person[command](rest)
  }
  if (command === 'import') {
    const { importArchive } = await import('./commands/import.js')
    return importArchive(rest)
  }
  if (command === 'task') {
    const { task } = await import('./commands/task.js')
    return await task(rest)
  }
  const client = command === undefined ? undefined : CLIENT_COMMANDS[command]
  if (client !== undefined) {
    const commands = await import('./commands/client.js')
    return await commands[client](rest)
  }
  if (command !== undefined && !command.startsWith('-')) {
    const names = COMMANDS.map(c => c.name).join(', ')
    throw new ConfigError(
      `unknown command ${JSON.stringify(command)}; commands: ${names}, or start a node with --role <role> (see --help)`
    )
  }
  const config = parseNodeArgs(argv)
  if (config.help) {
    console.log(helpText())
    return 0
  }
  if (config.version) {
    console.log(VERSION)
    return 0
  }
  const { runNode } = await import('./app/run-node.js')
  return await runNode(config)
}

/**
 * `keygen`: a new swarm key on stdout, or in FILE (created with mode 0600; an existing file is never
 * overwritten, since it may be the only copy of a swarm's key).
 */
function keygen(args: readonly string[]): number {
  if (args.length > 1 || args[0]?.startsWith('-') === true) {
    throw new ConfigError(
      `keygen takes one file name at most (got ${args.join(' ')}); use: npm start -- keygen swarm.key`
    )
  }
  const file = args[0]
  if (file === undefined) {
    process.stdout.write(generateSwarmKey())
    return 0
  }
  try {
    writeFileSync(file, generateSwarmKey(), { mode: 0o600, flag: 'wx' })
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw new ConfigError(`${file} exists: keygen never overwrites a key; pick another name`)
    throw new ConfigError(
      `cannot write ${file} (${code ?? (err as Error).message}); pick a file in a folder you can write`
    )
  }
  console.error(
    `plan-swarm: wrote a new swarm key to ${file}; give every member a copy and start each with --swarm-key ${file}`
  )
  return 0
}

/** Exit codes: 2 configuration (flags, key files, identity), 3 data dir in use, 4 port in use, 1 anything else. */
const EXIT_CODES: Record<string, number> = {
  ConfigError: 2,
  SwarmKeyError: 2,
  AllowListError: 2,
  IdentityFileError: 2,
  SwarmNodeConfigError: 2,
  DataDirLockedError: 3,
  NoFreeDataDirError: 3,
  PortInUseError: 4,
  TimeoutError: 6,
  ProviderConfigError: 2
}

main(process.argv.slice(2)).then(
  code => {
    process.exitCode = code
  },
  (err: Error) => {
    const code = EXIT_CODES[err.name]
    console.error(`plan-swarm: ${code !== undefined ? err.message : (err.stack ?? String(err))}`)
    process.exitCode = code ?? 1
  }
)
