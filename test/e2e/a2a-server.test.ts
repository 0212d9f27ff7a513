/**
 * `--a2a`: the swarm as an A2A v1.0 agent, driven by the SDK's own client
 * (@a2a-js/sdk/client) against a swarm of real processes on loopback with
 * the offline provider (a decomposer with --a2a and --http, a scorer, an
 * executor), one swarm for every case:
 *   - the Agent Card is served without a token and names the endpoint,
 *     streaming, one skill and the bearer scheme;
 *   - a goal sent with SendStreamingMessage streams the plan's states
 *     ("n/m tasks done") and its results and deliverable as artifacts, and
 *     ends completed; a blocking SendMessage returns the completed task;
 *   - GetTask and ListTasks (filters, pages) read any plan the node holds,
 *     one submitted on the command line too;
 *   - a plan that waits for an approver is input-required;
 *   - a dropped stream loses nothing: SubscribeToTask picks the plan up, and
 *     sees CancelTask end it; a follow-up raises a plan's budget;
 *   - bad input (malformed JSON-RPC, unknown methods, a missing or wrong
 *     token, a foreign Origin, an over-long goal, a task id that is no plan,
 *     another key's plan) gets the protocol's error and publishes nothing.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client'
import { isJsonRpcError } from '@a2a-js/sdk/errors'
import { Role, TaskState } from '@a2a-js/sdk'
import { EXIT, cliEnv, removeTempDirs, runCli, spawnCli, stopCliChildren, tempDir } from '../helpers/cli-process.js'
import { waitUntil } from '../helpers/wait.js'
import { taskMessage } from '../../src/a2a/agent-client.js'
import type { Client } from '@a2a-js/sdk/client'
import type { Message, Part, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk'
import type { CliChild } from '../helpers/cli-process.js'

const SWARM = 'a2a-server-e2e'
const COMMON = ['--swarm', SWARM, '--no-mdns', '--listen', '/ip4/127.0.0.1/tcp/0']
const START_MS = 120_000
const PLAN_MS = 120_000

let nextId = 0
function text(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' }
}
function data(value: Record<string, unknown>): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' }
}
function message(parts: Part[], on = ''): Message {
  return {
    messageId: `m-${++nextId}`,
    contextId: '',
    taskId: on,
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: []
  }
}
function request(parts: Part[], on = ''): SendMessageRequest {
  return { tenant: '', message: message(parts, on), configuration: undefined, metadata: undefined }
}
function statusText(t: { status?: { message?: Message | undefined } | undefined }): string {
  const p = t.status?.message?.parts[0]?.content
  return p?.$case === 'text' ? p.value : ''
}
/** The JSON-RPC error code the client threw, or the message when it is no JSON-RPC error. */
async function codeOf(p: Promise<unknown>): Promise<{ code: number | string; message: string }> {
  try {
    await p
  } catch (err) {
    return { code: isJsonRpcError(err) ? err.envelopeCode : String(err), message: (err as Error).message }
  }
  throw new Error('expected an error')
}

describe('the swarm as an A2A agent, with the SDK client, against real processes', () => {
  let home: string
  let env: NodeJS.ProcessEnv
  let http = ''
  let seed = ''
  let base = ''
  let rpc = ''
  let token = ''
  let me = ''
  let client: Client
  let blocking: Client
  const nodes: CliChild[] = []

  const held = async (): Promise<number> =>
    ((await (await fetch(`${http}/status`)).json()) as { events: { held: number } }).events.held
  const post = async (body: string, headers: Record<string, string> = {}): Promise<Response> =>
    await fetch(rpc, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'a2a-version': '1.0',
        authorization: `Bearer ${token}`,
        ...headers
      },
      body
    })
  const makeClient = async (bearer: string, polling: boolean): Promise<Client> => {
    const withToken: typeof fetch = async (input, init) =>
      await fetch(input, {
        ...init,
        headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${bearer}` }
      })
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })],
        clientConfig: { polling }
      })
    )
    return await factory.createFromUrl(base)
  }

  beforeAll(async () => {
    home = tempDir('a2a-server')
    env = cliEnv(home)
    const first = spawnCli(
      [
        '--role',
        'decomposer',
        ...COMMON,
        '--data-dir',
        join(home, 'decomposer'),
        '--http',
        '127.0.0.1:0',
        '--a2a',
        '127.0.0.1:0',
        '--json'
      ],
      { env }
    )
    nodes.push(first)
    const started = await first.waitForJson(o => o.event === 'started', START_MS)
    http = started.http as string
    seed = (started.addresses as string[])[0] as string
    rpc = started.a2a as string
    token = started.a2aToken as string
    me = started.peerId as string
    base = rpc.replace(/\/a2a$/, '')
    for (const role of ['scorer', 'executor'])
      nodes.push(
        spawnCli(['--role', role, ...COMMON, '--data-dir', join(home, role), '--bootstrap', seed, '--json'], { env })
      )
    await Promise.all(nodes.slice(1).map(async n => await n.waitForJson(o => o.event === 'started', START_MS)))
    await waitUntil(
      'the A2A node to see a scorer and an executor',
      async () => {
        const roles = ((await (await fetch(`${http}/status`)).json()) as { roster: Array<{ role: string }> }).roster
        return roles.some(r => r.role === 'scorer') && roles.some(r => r.role === 'executor') ? true : undefined
      },
      START_MS,
      250
    )
    client = await makeClient(token, true)
    blocking = await makeClient(token, false)
  }, 2 * START_MS)

  afterAll(async () => {
    await stopCliChildren()
    removeTempDirs()
  }, 60_000)

  it('serves the Agent Card without a token', async () => {
    const r = await fetch(`${base}/.well-known/agent-card.json`)
    expect(r.status).toBe(200)
    const card = (await r.json()) as Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(card.name).toContain(SWARM)
    expect(card.supportedInterfaces).toEqual([{ url: rpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }])
    expect(card.capabilities.streaming).toBe(true)
    expect(card.skills).toHaveLength(1)
    expect(card.skills[0].name).toBe('Plan and carry out a goal')
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer')
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: {} } }])
  })

  let done = ''

  it(
    'streams a goal to completion: states with tasks done, then the results and the deliverable as artifacts',
    async () => {
      const events: StreamResponse[] = []
      for await (const e of client.sendMessageStream(
        request([text('plan a picnic in the park'), data({ maxDepth: 1 })])
      ))
        events.push(e)
      const first = events[0]?.payload
      expect(first?.$case).toBe('task')
      const task = first?.value as Task
      done = task.id
      expect(done).toMatch(/^[0-9a-f]{64}$/)
      expect(task.contextId).toBe(done)
      expect(task.metadata?.yours).toBe(true)
      expect(task.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED)
      expect(statusText(task)).toMatch(/^submitted: the goal is held by 12D3KooW/)
      const statuses = events.flatMap(e => (e.payload?.$case === 'statusUpdate' ? [e.payload.value] : []))
      const artifacts = events.flatMap(e => (e.payload?.$case === 'artifactUpdate' ? [e.payload.value] : []))
      const last = statuses[statuses.length - 1]
      expect(last?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(statusText(last ?? {})).toMatch(/^completed: (\d+)\/\1 tasks done/)
      // submitted (perhaps said again while no split is accepted), then working with how many tasks are
      // done, then completed; never back to submitted once working.
      const states = [task, ...statuses].map(s => s.status?.state)
      expect(states[0]).toBe(TaskState.TASK_STATE_SUBMITTED)
      const firstWorking = states.indexOf(TaskState.TASK_STATE_WORKING)
      expect(firstWorking).toBeGreaterThan(0)
      expect(states.slice(1, firstWorking).every(x => x === TaskState.TASK_STATE_SUBMITTED)).toBe(true)
      expect(states.slice(firstWorking, -1).every(x => x === TaskState.TASK_STATE_WORKING)).toBe(true)
      const working = statuses.filter(s => s.status?.state === TaskState.TASK_STATE_WORKING)
      expect(working.length).toBeGreaterThan(0)
      for (const s of working) expect(statusText(s)).toMatch(/\d+\/\d+ tasks done/)
      // The results of the leaves, then the deliverable; each once, all before the final state.
      const ids = artifacts.map(a => a.artifact?.artifactId)
      expect(new Set(ids).size).toBe(ids.length)
      expect(ids[ids.length - 1]).toBe('deliverable')
      expect(ids.filter(i => i?.startsWith('task-')).length).toBeGreaterThanOrEqual(2)
      const deliverable = artifacts[artifacts.length - 1]?.artifact?.parts[0]?.content
      expect(deliverable?.$case === 'text' && deliverable.value.length > 0).toBe(true)
      expect(events[events.length - 1]?.payload?.$case).toBe('statusUpdate')
    },
    PLAN_MS
  )

  it(
    'returns from a blocking SendMessage once the plan is done, and reads plans with GetTask and ListTasks',
    async () => {
      const got = (await blocking.sendMessage(request([text('plan a bake sale'), data({ maxDepth: 1 })]))) as Task
      expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(got.artifacts.map(a => a.artifactId)).toContain('deliverable')

      const again = await client.getTask({ tenant: '', id: done, historyLength: undefined })
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      expect(again.artifacts[again.artifacts.length - 1]?.artifactId).toBe('deliverable')

      const all = await client.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_COMPLETED,
        pageToken: '',
        statusTimestampAfter: undefined,
        pageSize: 1
      })
      expect(all.totalSize).toBeGreaterThanOrEqual(2)
      expect(all.tasks).toHaveLength(1)
      expect(all.tasks[0]?.artifacts).toEqual([])
      expect(all.nextPageToken).not.toBe('')
      const next = await client.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_COMPLETED,
        pageToken: all.nextPageToken,
        statusTimestampAfter: undefined,
        pageSize: 1
      })
      expect(next.tasks).toHaveLength(1)
      expect(next.tasks[0]?.id).not.toBe(all.tasks[0]?.id)
      expect([all.tasks[0]?.id, next.tasks[0]?.id].sort()).toEqual([done, got.id].sort())
      const one = await client.listTasks({
        tenant: '',
        contextId: done,
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
        includeArtifacts: true
      })
      expect(one.tasks.map(t => t.id)).toEqual([done])
      expect(one.tasks[0]?.artifacts.length).toBeGreaterThan(0)
    },
    PLAN_MS
  )

  it(
    "takes a task from another swarm's --a2a-agent executor as a goal, cut to fit",
    async () => {
      // What an executor sends: the task quoted in a text part, too long here for a goal, and a planSwarm data part.
      const handed = taskMessage(
        {
          plan: 'a'.repeat(64),
          task: 'b'.repeat(64),
          kind: 'rollup',
          goal: 'plan a village fair',
          path: [],
          title: 'plan a village fair',
          detail: 'combine the parts',
          inputs: ['Stalls', 'Music', 'Food'].map(title => ({ title, output: `${title}: ${'details '.repeat(400)}` }))
        },
        { data: true }
      )
      expect((handed.parts[0]?.content as { value: string }).value.length).toBeGreaterThan(4_000)
      const got = (await blocking.sendMessage({
        tenant: '',
        message: handed,
        configuration: undefined,
        metadata: undefined
      })) as Task
      expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      const goal = got.metadata?.goal as string
      expect(goal.length).toBeLessThanOrEqual(4_000)
      expect(goal).toContain('<goal>plan a village fair</goal>')
      expect(goal).toContain('<result title="Food">Food: details')
      expect(goal).toContain('[... cut to')
    },
    PLAN_MS
  )

  let open = ''

  it(
    'says input-required while an approver is awaited, and keeps a plan going when its stream drops',
    async () => {
      const approver = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      const waits = (await client.sendMessage(
        request([text('plan a quiet retreat'), data({ maxDepth: 1, approvers: [approver], approveFor: 'splits' })])
      )) as Task
      const input = await waitUntil(
        'the plan to wait for its approver',
        async () => {
          const t = await client.getTask({ tenant: '', id: waits.id, historyLength: undefined })
          return t.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED ? t : undefined
        },
        PLAN_MS,
        250
      )
      expect(statusText(input)).toContain(approver.slice(-8))
      expect(statusText(input)).toMatch(/waits for a person/)

      // A plan only outside workers do: no executor here finishes it, so it stays open.
      const drop = new AbortController()
      const stream = client.sendMessageStream(
        request([text('plan a reading list'), data({ maxDepth: 1, executors: 'outside' })]),
        { signal: drop.signal }
      )
      const first = await stream.next()
      open =
        (first.value as StreamResponse).payload?.$case === 'task'
          ? ((first.value as StreamResponse).payload?.value as Task).id
          : ''
      expect(open).toMatch(/^[0-9a-f]{64}$/)
      drop.abort()
      await stream.return(undefined).catch(() => {})
      await waitUntil(
        'the dropped plan to be split',
        async () => {
          const t = await client.getTask({ tenant: '', id: open, historyLength: undefined })
          return t.status?.state === TaskState.TASK_STATE_WORKING && /\/[1-9]\d* tasks/.test(statusText(t))
            ? t
            : undefined
        },
        PLAN_MS,
        250
      )

      // A follow-up on the task raises its budget.
      const raised = (await client.sendMessage(request([data({ budgetTokens: 3_000_000 })], open))) as Task
      expect(raised.metadata?.budgetTokens).toBe(3_000_000)

      // SubscribeToTask picks the plan up again and sees CancelTask end it.
      const seen: StreamResponse[] = []
      const following = (async () => {
        for await (const e of client.resubscribeTask({ tenant: '', id: open })) seen.push(e)
      })()
      await waitUntil('the subscription to start', () => seen.length > 0, 30_000)
      expect(seen[0]?.payload?.$case).toBe('task')
      const cancelled = await client.cancelTask({ tenant: '', id: open, metadata: { reason: 'not needed' } })
      expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      await following
      const end = seen[seen.length - 1]?.payload
      expect(end?.$case === 'statusUpdate' && end.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
      // Cancelling again says the same; a finished plan cannot be cancelled.
      expect((await client.cancelTask({ tenant: '', id: open, metadata: undefined })).status?.state).toBe(
        TaskState.TASK_STATE_CANCELED
      )
      expect((await codeOf(client.cancelTask({ tenant: '', id: done, metadata: undefined }))).code).toBe(-32002)
      await client.cancelTask({ tenant: '', id: waits.id, metadata: undefined })
    },
    2 * PLAN_MS
  )

  it(
    'answers bad input with the protocol error and a message, and publishes nothing',
    async () => {
      // Another key's plan, submitted on the command line: readable here, not cancellable.
      const r = await runCli(
        [
          'submit',
          'plan a city walk',
          ...COMMON,
          '--bootstrap',
          seed,
          '--data-dir',
          join(home, 'someone'),
          '--max-depth',
          '1',
          '--executors',
          'outside'
        ],
        { env },
        PLAN_MS
      )
      expect(r.code, r.stderr.slice(-2000)).toBe(EXIT.OK)
      const theirs = r.stdout.trim().split('\n')[0] as string
      // Split into leaves (max depth 1) that wait for outside workers: nothing more happens to it, so the count of
      // events below holds still.
      const read = await waitUntil(
        'the other plan to reach the A2A node and wait for outside workers',
        async () => {
          const t = await client.getTask({ tenant: '', id: theirs, historyLength: undefined }).catch(() => undefined)
          return t !== undefined && /\/[1-9]\d* tasks done/.test(statusText(t)) ? t : undefined
        },
        PLAN_MS,
        250
      )
      expect(read.metadata?.yours).toBe(false)
      expect(read.metadata?.author).not.toBe(me)
      await new Promise(resolve => setTimeout(resolve, 1_500))
      const before = await held()

      const notYours = await codeOf(client.cancelTask({ tenant: '', id: theirs, metadata: undefined }))
      expect(notYours.code).toBe(-32002)
      expect(notYours.message).toMatch(/not by this node's key.*only its author can cancel it/)
      const raise = await codeOf(client.sendMessage(request([data({ budgetTokens: 5_000_000 })], theirs)))
      expect(raise.code).toBe(-32602)
      expect(raise.message).toMatch(/not by this key/)
      const long = await codeOf(client.sendMessage(request([text('x'.repeat(5_000))])))
      expect(long.code).toBe(-32602)
      expect(long.message).toMatch(/5000 characters long; the most is 4000/)
      const badParam = await codeOf(client.sendMessage(request([text('plan a party'), data({ maxDepht: 1 })])))
      expect(badParam.code).toBe(-32602)
      expect(badParam.message).toMatch(/maxDepht/)
      const noPlan = await codeOf(client.getTask({ tenant: '', id: 'nope', historyLength: undefined }))
      expect(noPlan.code).toBe(-32001)
      expect(noPlan.message).toMatch(/a task id is a plan id/)
      const notHeld = await codeOf(client.getTask({ tenant: '', id: 'f'.repeat(64), historyLength: undefined }))
      expect(notHeld.code).toBe(-32001)
      expect(notHeld.message).toMatch(/not held by this node/)
      const textOnly = await codeOf(client.sendMessage(request([text('make it bigger')], theirs)))
      expect(textOnly.code).toBe(-32602)
      expect(textOnly.message).toMatch(/makes one change, in a data part/)
      const toFinished = await codeOf(client.sendMessage(request([data({ budgetTokens: 5_000_000 })], done)))
      expect(toFinished.code).toBe(-32004)
      const finished = await codeOf(client.resubscribeTask({ tenant: '', id: done }).next())
      expect(finished.code).toBe(-32004)
      expect(finished.message).toMatch(/read it with GetTask/)

      // The envelope, the method, the token, the Origin: plain HTTP, as any client might send them.
      const rpcError = async (res: Response): Promise<{ status: number; code: number; message: string }> => {
        const body = (await res.json()) as { error: { code: number; message: string } }
        return { status: res.status, ...body.error }
      }
      expect(await rpcError(await post('{"jsonrpc": "2.0", "method": '))).toMatchObject({ code: -32700 })
      expect(await rpcError(await post('{"method": "GetTask", "id": 1}'))).toMatchObject({
        code: -32600,
        message: expect.stringMatching(/"jsonrpc": "2.0"/)
      })
      expect(
        await rpcError(await post('{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}}'))
      ).toMatchObject({
        code: -32601,
        message: expect.stringMatching(/this agent serves SendMessage/)
      })
      const ask = '{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}'
      expect(await rpcError(await post(ask, { authorization: '' }))).toMatchObject({
        status: 401,
        message: expect.stringMatching(/missing token/)
      })
      expect(await rpcError(await post(ask, { authorization: 'Bearer nope' }))).toMatchObject({
        status: 401,
        message: expect.stringMatching(/wrong token.*PLAN_SWARM_A2A_TOKEN/)
      })
      expect(await rpcError(await post(ask, { origin: 'http://evil.example' }))).toMatchObject({
        status: 403,
        message: expect.stringMatching(/cross-origin request refused/)
      })
      expect(await rpcError(await post(ask, { 'a2a-version': '' }))).toMatchObject({ code: -32009 })
      // The SDK client with a wrong token gets the refusal too.
      const stranger = await makeClient('wrong', true)
      expect((await codeOf(stranger.sendMessage(request([text('plan a heist')])))).message).toMatch(/wrong token/)

      await new Promise(resolve => setTimeout(resolve, 1_500))
      expect(await held()).toBe(before)
    },
    PLAN_MS
  )

  it(
    'answers a goal that no peer confirms holding with the submitted task, never an error, and keeps it',
    async () => {
      // A lone node with a committee named outright: the goal is published and stored, but nobody syncs.
      const lone = spawnCli(
        ['--role', 'observer', ...COMMON, '--data-dir', join(home, 'lone'), '--http', '127.0.0.1:0'].concat([
          '--a2a',
          '127.0.0.1:0',
          '--json'
        ]),
        { env }
      )
      const started = await lone.waitForJson(o => o.event === 'started', START_MS)
      const res = await fetch(started.a2a as string, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'a2a-version': '1.0',
          authorization: `Bearer ${started.a2aToken as string}`
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: {
            message: {
              role: 'ROLE_USER',
              messageId: 'lone-1',
              parts: [{ text: 'plan a walk alone' }, { data: { committee: [me], timeoutSeconds: 1 } }]
            }
          }
        })
      })
      const body = (await res.json()) as {
        result?: { task: { id: string; status: { state: string; message: { parts: Array<{ text: string }> } } } }
        error?: unknown
      }
      expect(body.error).toBeUndefined()
      expect(body.result?.task.status.state).toBe('TASK_STATE_SUBMITTED')
      expect(body.result?.task.status.message.parts[0]?.text).toMatch(/stored on this node.*no peer confirmed/)
      const status = (await (await fetch(`${started.http as string}/status`)).json()) as { events: { held: number } }
      expect(status.events.held).toBeGreaterThan(0)
    },
    PLAN_MS
  )
})
