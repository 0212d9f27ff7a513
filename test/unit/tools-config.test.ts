/**
 * The tools file: Claude's mcpServers format with our allow and tags, the
 * `${VAR}` expansion, relative cwd, and that every refusal names the file,
 * the server and what to fix.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { MAX_NEED_CHARS } from '../../src/core/limits.js'
import { ConfigError } from '../../src/errors.js'
import { loadToolsFile, parseToolsConfig } from '../../src/tools/index.js'

const FILE = './conf/tools.json'
const parse = (doc: unknown, env: Record<string, string> = {}) => parseToolsConfig(JSON.stringify(doc), FILE, env)
const servers = (s: Record<string, unknown>) => ({ mcpServers: s })

/** The message of the ConfigError that parsing `doc` throws. */
function refusal(doc: unknown, env: Record<string, string> = {}): string {
  try {
    parse(doc, env)
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError)
    return (err as Error).message
  }
  throw new Error('the file was accepted')
}

describe('parseToolsConfig', () => {
  it('reads stdio and http servers in the Claude Desktop / Claude Code format', () => {
    const config = parse(
      servers({
        notes: { command: 'node', args: ['server.js', '--dir', 'notes'], env: { A: 'b' }, cwd: '..', allow: ['read'] },
        plain: { type: 'stdio', command: '/usr/bin/srv', tags: ['files', 'docs'] },
        web: { type: 'http', url: 'https://example.com/mcp', headers: { Authorization: 'Bearer t' } },
        alias: { type: 'streamable-http', url: 'http://127.0.0.1:9/mcp' },
        bare: { url: 'http://127.0.0.1:9/mcp', comment: 'unknown keys are ignored' }
      })
    )
    expect(config.file).toBe(FILE)
    expect(config.servers).toEqual([
      {
        name: 'notes',
        kind: 'stdio',
        command: 'node',
        args: ['server.js', '--dir', 'notes'],
        env: { A: 'b' },
        cwd: resolve('.'),
        allow: ['read'],
        tags: []
      },
      {
        name: 'plain',
        kind: 'stdio',
        command: '/usr/bin/srv',
        args: [],
        env: {},
        cwd: null,
        allow: null,
        tags: ['files', 'docs']
      },
      {
        name: 'web',
        kind: 'http',
        url: 'https://example.com/mcp',
        headers: { Authorization: 'Bearer t' },
        allow: null,
        tags: []
      },
      { name: 'alias', kind: 'http', url: 'http://127.0.0.1:9/mcp', headers: {}, allow: null, tags: [] },
      { name: 'bare', kind: 'http', url: 'http://127.0.0.1:9/mcp', headers: {}, allow: null, tags: [] }
    ])
  })

  it('takes a relative cwd from the folder of the tools file', () => {
    const [a, b] = parse(servers({ a: { command: 'x', cwd: 'srv' }, b: { command: 'x', cwd: '/abs/where' } })).servers
    expect(a).toMatchObject({ cwd: resolve('conf', 'srv') })
    expect(b).toMatchObject({ cwd: '/abs/where' })
  })

  it('expands ${VAR} and ${VAR:-default} in command, args, env, cwd, url and headers', () => {
    const env = { BIN: '/opt/bin', TOKEN: 'sekret', EMPTY: '', HOST: 'example.org' }
    const config = parse(
      servers({
        s: {
          command: '${BIN}/srv',
          args: ['--token=${TOKEN}', '${MISSING:-fallback}', '${EMPTY:-was empty}', '$NOT_A_REF'],
          env: { KEY: '${TOKEN}', KEPT: 'plain' },
          cwd: '${BIN:-/nowhere}'
        },
        h: { type: 'http', url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } }
      }),
      env
    )
    expect(config.servers[0]).toMatchObject({
      command: '/opt/bin/srv',
      args: ['--token=sekret', 'fallback', 'was empty', '$NOT_A_REF'],
      env: { KEY: 'sekret', KEPT: 'plain' },
      cwd: '/opt/bin'
    })
    expect(config.servers[1]).toMatchObject({
      url: 'https://example.org/mcp',
      headers: { Authorization: 'Bearer sekret' }
    })
  })

  it('drops repeated allow entries and tags', () => {
    expect(parse(servers({ s: { command: 'x', allow: ['a', 'a', 'b'], tags: ['t', 't'] } })).servers[0]).toMatchObject({
      allow: ['a', 'b'],
      tags: ['t']
    })
  })

  const cases: Array<[string, unknown, string]> = [
    ['a missing mcpServers', { servers: {} }, `tools file ${FILE}: must be a JSON object with an "mcpServers" object`],
    [
      'an mcpServers array',
      { mcpServers: [] },
      `tools file ${FILE}: must be a JSON object with an "mcpServers" object`
    ],
    [
      'no servers',
      servers({}),
      `tools file ${FILE}: lists no servers: add one under "mcpServers", or drop the tools file`
    ],
    [
      'a bad server name',
      servers({ 'my server': { command: 'x' } }),
      'server name "my server" is not a valid name: use letters'
    ],
    ['a slash in a name', servers({ 'a/b': { command: 'x' } }), 'server name "a/b" is not a valid name'],
    [
      'a long name',
      servers({ ['n'.repeat(MAX_NEED_CHARS + 1)]: { command: 'x' } }),
      `at most ${MAX_NEED_CHARS} characters`
    ],
    ['a server that is no object', servers({ s: 'node x.js' }), 'server "s": must be an object'],
    [
      'args of the wrong type',
      servers({ s: { command: 'x', args: 'a b' } }),
      'server "s": "args" must be an array of strings'
    ],
    [
      'an arg of the wrong type',
      servers({ s: { command: 'x', args: ['a', 1] } }),
      '"args" must be an array of strings'
    ],
    ['a command of the wrong type', servers({ s: { command: ['node'] } }), 'server "s": "command" must be a string'],
    [
      'an empty command',
      servers({ s: { command: ' ' } }),
      'server "s": needs a "command": the program that runs the server'
    ],
    [
      'env values that are no strings',
      servers({ s: { command: 'x', env: { N: 1 } } }),
      '"env" must be an object of string values'
    ],
    [
      'headers that are no object',
      servers({ s: { type: 'http', url: 'http://h/mcp', headers: ['a'] } }),
      '"headers" must be an object'
    ],
    ['a cwd of the wrong type', servers({ s: { command: 'x', cwd: 1 } }), 'server "s": "cwd" must be a string'],
    ['allow of the wrong type', servers({ s: { command: 'x', allow: 'read' } }), '"allow" must be an array of strings'],
    [
      'an empty allow',
      servers({ s: { command: 'x', allow: [] } }),
      '"allow" lists no tools: name the tools to offer, or drop "allow"'
    ],
    [
      'a bad tag',
      servers({ s: { command: 'x', tags: ['web browser'] } }),
      'server "s": tag "web browser" in "tags" is not a valid name'
    ],
    ['a tag with a slash', servers({ s: { command: 'x', tags: ['a/b'] } }), 'tag "a/b" in "tags" is not a valid name'],
    [
      'sse',
      servers({ s: { type: 'sse', url: 'http://h/sse' } }),
      "give the URL of the server's Streamable HTTP endpoint"
    ],
    [
      'an unknown type',
      servers({ s: { type: 'ws', url: 'ws://h' } }),
      'server "s": unknown "type" "ws": use "stdio" or "http"'
    ],
    ['a type of the wrong type', servers({ s: { type: 1, command: 'x' } }), '"type" must be a string'],
    [
      'neither command nor url',
      servers({ s: { args: [] } }),
      'server "s": needs a "command" (a server run on stdio) or "type": "http"'
    ],
    [
      'both command and url',
      servers({ s: { command: 'x', url: 'http://h' } }),
      'has both "command" and "url": set "type"'
    ],
    ['http without a url', servers({ s: { type: 'http' } }), 'server "s": "type": "http" needs a "url"'],
    ['a url that is no URL', servers({ s: { type: 'http', url: 'not a url' } }), '"url" "not a url" is not a URL'],
    [
      'a url of another scheme',
      servers({ s: { type: 'http', url: 'ftp://h/mcp' } }),
      '"url" "ftp://h/mcp" must be http:// or https://'
    ],
    ['stdio without a command', servers({ s: { type: 'stdio', url: 'http://h' } }), 'server "s": needs a "command"']
  ]
  it.each(cases)('refuses %s, naming the file, the server and the fix', (_what, doc, expected) => {
    const msg = refusal(doc)
    expect(msg.startsWith(`tools file ${FILE}: `)).toBe(true)
    expect(msg).toContain(expected)
  })

  it('refuses an unset variable without a default, naming it and where it is used', () => {
    expect(refusal(servers({ s: { command: 'x', env: { KEY: '${API_KEY}' } } }))).toBe(
      `tools file ${FILE}: server "s": "env" value of KEY uses \${API_KEY}, which is not set: ` +
        'set API_KEY, or write ${API_KEY:-default}'
    )
    expect(refusal(servers({ s: { command: 'x', args: ['a', '${NOPE}'] } }))).toMatch(
      /server "s": "args"\[1\] uses \$\{NOPE\}/
    )
    expect(refusal(servers({ s: { type: 'http', url: 'https://${HOST}/mcp' } }))).toMatch(/"url" uses \$\{HOST\}/)
    expect(refusal(servers({ s: { type: 'http', url: 'http://h', headers: { A: '${T}' } } }))).toMatch(
      /"headers" value of A uses \$\{T\}/
    )
    expect(refusal(servers({ s: { command: '${BIN}' } }))).toMatch(/"command" uses \$\{BIN\}/)
    expect(refusal(servers({ s: { command: 'x', cwd: '${WHERE}' } }))).toMatch(/"cwd" uses \$\{WHERE\}/)
  })

  it('refuses text that is not JSON with the parser message', () => {
    expect(() => parseToolsConfig('{"mcpServers": ', FILE, {})).toThrow(
      new RegExp(`^tools file ${FILE.replace('.', '\\.')}: is not JSON \\(.+\\); it must be \\{"mcpServers"`)
    )
  })
})

describe('loadToolsFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tools-config-'))
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads a file and takes a relative cwd from its folder', () => {
    const path = join(dir, 'tools.json')
    writeFileSync(path, JSON.stringify(servers({ s: { command: 'x', cwd: 'sub' } })))
    expect(loadToolsFile(path, {}).servers[0]).toMatchObject({ cwd: join(dir, 'sub') })
  })

  it('says when the file is missing', () => {
    const path = join(dir, 'nope.json')
    expect(() => loadToolsFile(path)).toThrow(ConfigError)
    expect(() => loadToolsFile(path)).toThrow(
      `tools file ${path}: cannot read it (there is no such file); give the path`
    )
  })
})
