import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { CLI, REPO_ROOT } from './cli-process.js'

/** The MCP SDK's client over stdio to a fresh `npm start -- mcp ...` process (the real CLI). */
export async function mcpStdioClient(
  name: string,
  mcpArgs: readonly string[],
  env: NodeJS.ProcessEnv
): Promise<Client> {
  const [command, ...args] = CLI
  const transport = new StdioClientTransport({
    command,
    args: [...args, 'mcp', ...mcpArgs],
    env: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined)),
    cwd: REPO_ROOT,
    stderr: 'pipe'
  })
  const client = new Client({ name, version: '1.0.0' })
  await client.connect(transport)
  return client
}
