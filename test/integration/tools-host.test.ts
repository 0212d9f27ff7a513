/**
 * The tool host against real MCP servers: the stand-in server of
 * test/helpers/tool-server.ts as child processes on stdio and over
 * Streamable HTTP. Covers listing with allow and tags, calls that answer,
 * hang, fail, flood and crash (and the restart after it), aborts, the
 * refusals at start, and that close() leaves no process behind; and how
 * a result's content parts become the text the model reads.
 */
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError } from '../../src/errors.js'
import { loadToolsFile, parseToolsConfig, startToolHost } from '../../src/tools/index.js'
import { outcomeOf } from '../../src/tools/content.js'
import { REPO_ROOT } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import type { ChildProcess } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import type { ToolHost } from '../../src/tools/index.js'

const SERVER_ARGS = ['--import', 'tsx', 'test/helpers/tool-server.ts']
const dir = mkdtempSync(join(tmpdir(), 'tools-host-'))
const file = join(dir, 'tools.json')

/** A config of one stdio stand-in server per entry, as a tools file would give it. */
function stdioConfig(servers: Record<string, { env?: Record<string, string>; allow?: string[]; tags?: string[] }>) {
  const mcpServers = Object.fromEntries(
    Object.entries(servers).map(([name, s]) => [
      name,
      { command: process.execPath, args: SERVER_ARGS, cwd: REPO_ROOT, env: s.env ?? {}, allow: s.allow, tags: s.tags }
    ])
  )
  return parseToolsConfig(JSON.stringify({ mcpServers }), file)
}

interface CallLine {
  tool: string
  args: unknown
  pid: number
}
const readCalls = (path: string): CallLine[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(l => l !== '')
    .map(l => JSON.parse(l) as CallLine)

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** What a start that must fail rejects with. */
async function refusal(start: Promise<ToolHost>): Promise<ConfigError> {
  const err = await start.then(
    async host => {
      await host.close()
      return new Error('the start succeeded')
    },
    (e: unknown) => e
  )
  expect(err).toBeInstanceOf(ConfigError)
  return err as ConfigError
}

afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('a tool host over stdio', () => {
  const calls = join(dir, 'calls.jsonl')
  const logs: string[] = []
  let host: ToolHost
  beforeAll(async () => {
    writeFileSync(calls, '')
    const config = stdioConfig({
      stand: {
        env: { TOOL_SERVER_CALLS_FILE: calls, TOOL_SERVER_TAG: 'main' },
        allow: ['echo', 'slow', 'crash', 'huge', 'fail'],
        tags: ['demo']
      }
    })
    host = await startToolHost(config, { log: l => logs.push(l), restart: { firstMs: 100, maxMs: 400 } })
  })
  afterAll(async () => {
    await host.close()
  })

  it('lists only the allowed tools and offers tags, the server and its tools', () => {
    expect(
      host
        .list()
        .map(t => t.name)
        .sort()
    ).toEqual(['crash', 'echo', 'fail', 'huge', 'slow'])
    const echo = host.list().find(t => t.name === 'echo')
    expect(echo?.server).toBe('stand')
    expect(echo?.description).toMatch(/Answers with the text/)
    expect(echo?.schema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } })
    expect(host.offers()).toEqual([
      'demo',
      'stand',
      'stand/crash',
      'stand/echo',
      'stand/fail',
      'stand/huge',
      'stand/slow'
    ])
    expect(host.servers()).toEqual([{ name: 'stand', up: true, tools: 5, error: null }])
    expect(logs.some(l => l.includes('(main)'))).toBe(true)
  })

  it('calls a tool and passes the arguments as given', async () => {
    expect(await host.call('stand', 'echo', { text: 'hello' }, { timeoutMs: 10_000 })).toEqual({
      ok: true,
      text: 'hello'
    })
    const bad = await host.call('stand', 'echo', { text: 5 }, { timeoutMs: 10_000 })
    expect(bad.ok).toBe(false)
    expect(bad.text).toMatch(/text/)
  })

  it('answers unknown servers and tools, and tools left out by allow, with what is offered', async () => {
    const noServer = await host.call('nope', 'echo', {}, { timeoutMs: 1_000 })
    expect(noServer).toMatchObject({ ok: false })
    expect(noServer.text).toMatch(/no tool server "nope".*stand\/echo/)
    const notAllowed = await host.call('stand', 'add', { a: 1, b: 2 }, { timeoutMs: 1_000 })
    expect(notAllowed.ok).toBe(false)
    expect(notAllowed.text).toMatch(/offers no tool "add"; it offers: echo, slow, crash, huge, fail/)
    expect(readCalls(calls).some(c => c.tool === 'add')).toBe(false)
  })

  it('gives up on a call past its timeout and keeps working', async () => {
    const slow = await host.call('stand', 'slow', { ms: 30_000 }, { timeoutMs: 300 })
    expect(slow).toEqual({ ok: false, text: 'the tool did not answer within 0.3 s' })
    await waitUntil(
      'the server to hear of the cancel',
      () => readCalls(calls).some(c => c.tool === 'slow-cancelled'),
      5_000
    )
    expect(await host.call('stand', 'echo', { text: 'still here' }, { timeoutMs: 10_000 })).toEqual({
      ok: true,
      text: 'still here'
    })
    expect(host.servers()[0]?.up).toBe(true)
  })

  it("passes an error result's text as a failure", async () => {
    expect(await host.call('stand', 'fail', {}, { timeoutMs: 10_000 })).toEqual({
      ok: false,
      text: 'it failed on purpose'
    })
  })

  it('keeps at most 4 MiB of a result', async () => {
    const huge = await host.call('stand', 'huge', { bytes: 5 * 1024 * 1024 }, { timeoutMs: 20_000 })
    expect(huge.ok).toBe(true)
    expect(huge.text.startsWith('xxxx')).toBe(true)
    expect(huge.text).toMatch(/\[cut: the result had 5242880 bytes; the first 4194304 are kept\]$/)
    expect(Buffer.byteLength(huge.text)).toBeLessThan(4 * 1024 * 1024 + 200)
  })

  it("rejects with the signal's reason when the call is aborted", async () => {
    const ctl = new AbortController()
    const reason = new Error('the task was cancelled')
    const slowCalls = (tool: string): number => readCalls(calls).filter(c => c.tool === tool).length
    const [started, cancelled] = [slowCalls('slow'), slowCalls('slow-cancelled')]
    const pending = host.call('stand', 'slow', { ms: 30_000 }, { timeoutMs: 60_000, signal: ctl.signal })
    await waitUntil('the slow call to reach the server', () => slowCalls('slow') === started + 1, 10_000)
    ctl.abort(reason)
    await expect(pending).rejects.toBe(reason)
    await waitUntil('the server to hear of the cancel', () => slowCalls('slow-cancelled') === cancelled + 1, 5_000)
    await expect(host.call('stand', 'echo', { text: 'x' }, { timeoutMs: 1_000, signal: ctl.signal })).rejects.toBe(
      reason
    )
  })

  it('survives a crash mid-call: the tools leave the offer, and come back after the restart', async () => {
    const before = readCalls(calls).at(-1)?.pid ?? 0
    let changes = 0
    const off = host.onChange(() => {
      changes++
    })
    const crash = await host.call('stand', 'crash', {}, { timeoutMs: 10_000 })
    expect(crash.ok).toBe(false)
    expect(crash.text).toMatch(/tool server "stand" exited during the call; it is being restarted/)
    expect(host.offers()).toEqual([])
    expect(host.list()).toEqual([])
    expect(changes).toBe(1)
    const down = await host.call('stand', 'echo', { text: 'x' }, { timeoutMs: 1_000 })
    expect(down.ok).toBe(false)
    expect(down.text).toMatch(/tool server "stand" is down/)
    await waitUntil('the server to come back', () => host.offers().includes('stand/echo'), 20_000)
    expect(changes).toBe(2)
    off()
    expect(await host.call('stand', 'echo', { text: 'back' }, { timeoutMs: 10_000 })).toEqual({
      ok: true,
      text: 'back'
    })
    const after = readCalls(calls).at(-1)?.pid ?? 0
    expect(after).not.toBe(before)
    expect(alive(before)).toBe(false)
    expect(logs.some(l => /tool server "stand" is down/.test(l))).toBe(true)
    expect(logs.some(l => /tool server "stand" is back with 5 tools/.test(l))).toBe(true)
  })

  it('close() stops the server process', async () => {
    const pid = readCalls(calls).at(-1)?.pid ?? 0
    expect(alive(pid)).toBe(true)
    await host.close()
    await waitUntil('the server process to be gone', () => !alive(pid), 5_000)
    expect(host.offers()).toEqual([])
    expect((await host.call('stand', 'echo', { text: 'x' }, { timeoutMs: 1_000 })).ok).toBe(false)
  })
})

describe('a tool host over Streamable HTTP', () => {
  let child: ChildProcess
  let url: string
  beforeAll(async () => {
    child = spawn(process.execPath, [...SERVER_ARGS, '--http', '0'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe']
    })
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
    url = await new Promise<string>((resolve, reject) => {
      lines.once('line', resolve)
      child.once('exit', code => {
        reject(new Error(`the http tool server exited with ${code}`))
      })
    })
  })
  afterAll(() => {
    child.kill('SIGTERM')
  })

  it('lists and calls tools (sending the headers given)', async () => {
    const text = JSON.stringify({
      mcpServers: { web: { type: 'http', url, headers: { 'x-token': '${TOOLS_TEST_TOKEN:-none}' }, tags: ['net'] } }
    })
    const host = await startToolHost(parseToolsConfig(text, file))
    try {
      expect(host.offers()).toEqual([
        'net',
        'web',
        'web/add',
        'web/crash',
        'web/echo',
        'web/fail',
        'web/huge',
        'web/slow'
      ])
      expect(await host.call('web', 'add', { a: 2, b: 3 }, { timeoutMs: 10_000 })).toEqual({ ok: true, text: '5' })
      expect(await host.call('web', 'fail', {}, { timeoutMs: 10_000 })).toEqual({
        ok: false,
        text: 'it failed on purpose'
      })
    } finally {
      await host.close()
    }
  })

  it('refuses to start when the server refuses or cannot be reached', async () => {
    const refuser = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'text/plain' })
      res.end('no token')
    })
    await new Promise<void>(resolve => refuser.listen(0, '127.0.0.1', resolve))
    const port = (refuser.address() as AddressInfo).port
    const gone = createServer()
    await new Promise<void>(resolve => gone.listen(0, '127.0.0.1', resolve))
    const gonePort = (gone.address() as AddressInfo).port
    await new Promise(resolve => gone.close(resolve))
    try {
      const text = JSON.stringify({
        mcpServers: {
          locked: { type: 'streamable-http', url: `http://127.0.0.1:${port}/mcp` },
          away: { type: 'http', url: `http://127.0.0.1:${gonePort}/mcp` }
        }
      })
      const err = await refusal(startToolHost(parseToolsConfig(text, file), { connectTimeoutMs: 5_000 }))
      expect(err.message).toMatch(
        new RegExp(`tools file ${file}: server "locked": .* refused with HTTP 401.*: check the url .* and the headers`)
      )
      expect(err.message).toMatch(new RegExp(`tools file ${file}: server "away": cannot reach .*check the url`))
    } finally {
      refuser.close()
    }
  })
})

describe('a tool host refuses to start', () => {
  it('on a tools file that is not JSON', () => {
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, '{"mcpServers": {')
    expect(() => loadToolsFile(bad)).toThrow(new RegExp(`^tools file ${bad}: is not JSON \\(.+\\); it must be`))
  })

  it('on a command that does not exist, naming it and the fix', async () => {
    const text = JSON.stringify({ mcpServers: { ghost: { command: 'no-such-command-here-42' } } })
    const err = await refusal(startToolHost(parseToolsConfig(text, file)))
    expect(err.message).toBe(
      `tools file ${file}: server "ghost": command "no-such-command-here-42" was not found on PATH: ` +
        'give its full path in "command", or install it'
    )
  })

  it('on a malformed schema, an exit at start and an allow naming a missing tool, each with its server', async () => {
    const config = stdioConfig({
      good: {},
      bad: { env: { TOOL_SERVER_BAD_SCHEMA: '1' } },
      quitter: { env: { TOOL_SERVER_EXIT_AT_START: '1' } },
      picky: { allow: ['echo', 'teleport'] }
    })
    const logs: string[] = []
    const err = await refusal(startToolHost(config, { connectTimeoutMs: 15_000, log: l => logs.push(l) }))
    // The servers that came up were stopped.
    const pids = logs.flatMap(l => /^\[(?:good|bad|picky)\] tool-server (\d+) starting/.exec(l)?.[1] ?? []).map(Number)
    expect(pids).toHaveLength(3)
    await waitUntil('the servers that came up to be stopped', () => pids.every(p => !alive(p)), 5_000)
    const lines = err.message.split(/\n(?=tools file)/)
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(
      new RegExp(
        `^tools file ${file}: server "bad": the tool "broken" has an inputSchema that is not a JSON Schema object ` +
          'with "type": "object" .*: fix the server, or leave it out with "allow"'
      )
    )
    expect(lines[1]).toMatch(
      new RegExp(
        `^tools file ${file}: server "quitter": the server exited before it finished starting; its last stderr`
      )
    )
    expect(lines[1]).toMatch(/exiting at start as TOOL_SERVER_EXIT_AT_START asks/)
    expect(lines[2]).toBe(
      `tools file ${file}: server "picky": "allow" names "teleport", which the server does not have; ` +
        'it has: add, crash, echo, fail, huge, slow'
    )
  })
})

describe("a tool result's text", () => {
  it('joins text parts, puts placeholders for binary parts, and uses structured content when there is no text', () => {
    const png = Buffer.alloc(1234).toString('base64')
    expect(
      outcomeOf({
        content: [
          { type: 'text', text: 'first' },
          { type: 'image', data: png, mimeType: 'image/png' },
          { type: 'audio', data: Buffer.alloc(10).toString('base64'), mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'the text of a' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: png, mimeType: 'application/octet-stream' } },
          { type: 'resource_link', uri: 'file:///c.md', name: 'c' }
        ]
      })
    ).toEqual({
      ok: true,
      text: [
        'first',
        '[image image/png, 1234 bytes, not shown]',
        '[audio audio/wav, 10 bytes, not shown]',
        'the text of a',
        '[resource file:///b.bin application/octet-stream, 1234 bytes, not shown]',
        '[resource link file:///c.md (c)]'
      ].join('\n\n')
    })
    expect(outcomeOf({ content: [], structuredContent: { temp: 21 } })).toEqual({ ok: true, text: '{"temp":21}' })
    expect(outcomeOf({ content: [{ type: 'text', text: 'warm' }], structuredContent: { temp: 21 } }).text).toBe('warm')
    expect(outcomeOf({ content: [], isError: true })).toEqual({
      ok: false,
      text: 'the tool reported an error without text'
    })
  })

  it('cuts at the byte cap without splitting a character', () => {
    const out = outcomeOf({ content: [{ type: 'text', text: 'ab€€' }] }, 4)
    expect(out.text).toBe('ab\n\n[cut: the result had 8 bytes; the first 4 are kept]')
  })
})
