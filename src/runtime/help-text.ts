import { CLIENT_OPTIONS, COMMANDS, EXIT_CODE_MEANINGS, OPTIONS, optionEnv } from './cli-options.js'

/** The text of `--help`, rendered from the tables of cli-options.ts so it lists every command and option there is. */
export function helpText(): string {
  const lines = Object.entries(OPTIONS).map(([name, spec]) => {
    const flag = `--${name}${spec.type === 'string' ? ' <value>' : ''}`
    const variable = optionEnv(name)
    const env = variable === undefined ? '' : `\n  ${''.padEnd(26)} (env ${variable})`
    return `  ${flag.padEnd(26)} ${spec.help}${env}`
  })
  return [
    'plan-swarm: a leaderless planning swarm of libp2p peers.',
    '',
    'Usage:',
    '  npm start -- --role <decomposer|scorer|executor|observer> [options]',
    ...COMMANDS.map(c => `  npm start -- ${c.usage}\n      ${c.help}`),
    '  npm start -- --version',
    '      print the release',
    '  npm run demo [-- "<goal>"]',
    '      a whole local swarm, offline unless ANTHROPIC_API_KEY is set',
    '',
    'Options:',
    ...lines,
    '',
    'Options of submit and the author commands (also PLAN_SWARM_<NAME>):',
    ...Object.entries(CLIENT_OPTIONS).map(
      ([name, spec]) => `  ${`--${name}${spec.type === 'string' ? ' <value>' : ''}`.padEnd(26)} ${spec.help}`
    ),
    '',
    'Examples:',
    '  npm start -- --role scorer --http 127.0.0.1:7070',
    '  npm start -- --role observer --http 127.0.0.1:8080 --allow-submit   (open the printed dashboard URL)',
    '  npm start -- --role executor --no-mdns --bootstrap /ip4/10.0.0.5/tcp/4001/p2p/12D3KooW...',
    '  npm start -- --role observer --relay --listen /ip4/0.0.0.0/tcp/4001 --announce /ip4/203.0.113.7/tcp/4001   (a public relay)',
    '  PLAN_SWARM_ROLE=observer PLAN_SWARM_SWARM_KEY=swarm.key npm start',
    '',
    `Exit codes: ${EXIT_CODE_MEANINGS.map(([code, meaning]) => `${code} ${meaning}`).join(', ')}.`
  ].join('\n')
}
