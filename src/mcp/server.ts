import { McpServer, ResourceTemplate } from '@modelcontextprotocol/server'
import { renderMarkdown } from '../../roles/render.js'
import { registerSwarmTools } from './tools/index.js'
import { agentPlan } from './plan-json.js'
import type { McpServerFactory } from '@modelcontextprotocol/server'
import type { SwarmTools } from './tools/swarm-tool.js'
import type { PlanId } from '../core/events.js'

/** The URI of a plan's resource. */
export function planUri(plan: string): string {
  return `plan-swarm://plans/${plan}`
}

const INSTRUCTIONS = [
  'plan-swarm is a leaderless planning swarm: peers decompose a goal into a tree, a ' +
    'committee votes on splits, executors do the leaves, and the results roll up into a deliverable.',
  'Start with swarm_status. Submit with plan_submit, follow with plan_wait (progress ' +
    'notifications) or plan_get, and read the result with plan_export.',
  'To do tasks yourself, submit with executors "outside" (or "any"), then loop: task_next, do the task, task_complete.'
].join(' ')

export interface SwarmMcp {
  /** A fresh McpServer per request (HTTP), all over the same node. */
  readonly factory: McpServerFactory
  /** A fresh McpServer per connection (stdio) that hears of plan changes itself (resource subscribers). */
  readonly connectionFactory: McpServerFactory
  /** Tell live servers that a plan changed (for resource subscribers). */
  readonly onPlanChanged: (fn: (uri: string) => void) => void
  readonly close: () => void
}

/**
 * MCP over one node: the tools of tools/ and a resource per plan
 * (`plan-swarm://plans/<id>`, as Markdown and as JSON). Change
 * notifications go out when a plan's events fold, at most once a second
 * per plan. `version` is the release (package.json's), the server's version to MCP clients.
 */
export function createSwarmMcp(tools: SwarmTools, version: string): SwarmMcp {
  const view = tools.view
  const listeners: Array<(uri: string) => void> = []
  const pending = new Set<string>()
  let flush: (() => void) | null = null
  const off = view.onFolded(events => {
    for (const e of events)
      if (e.env.plan !== '') pending.add(e.env.plan)
      else pending.add(e.id)
    if (flush !== null || pending.size === 0) return
    flush = view.scheduler.after(1_000, () => {
      flush = null
      const uris = [...pending].map(planUri)
      pending.clear()
      for (const uri of uris) for (const fn of listeners) fn(uri)
    })
  })

  const build = (): McpServer => {
    const server = new McpServer(
      { name: 'plan-swarm', version },
      { capabilities: { tools: {}, resources: { subscribe: true, listChanged: true } }, instructions: INSTRUCTIONS }
    )
    registerSwarmTools(server, tools)
    server.registerResource(
      'plan',
      new ResourceTemplate('plan-swarm://plans/{id}', {
        list: async () => ({
          resources: view.planLines().map(p => ({
            uri: planUri(p.id),
            name: `plan ${p.id.slice(0, 12)}`,
            title: p.goal.slice(0, 120),
            description: `${p.status}: ${p.done}/${p.nodes} nodes done`,
            mimeType: 'text/markdown'
          }))
        })
      }),
      {
        title: 'A plan',
        description:
          'A plan as Markdown (the tree with results and the deliverable) and as JSON (the tree an agent reads, results whole)',
        mimeType: 'text/markdown'
      },
      async (uri, variables) => {
        const id = String(variables.id ?? '')
        const tree = /^[0-9a-f]{64}$/.test(id) ? view.loadTree(id as PlanId) : undefined
        if (tree === undefined)
          throw new Error(`plan ${id.slice(0, 12)} is not held by this node: list the plans with plan_list`)
        return {
          contents: [
            { uri: uri.href, mimeType: 'text/markdown', text: renderMarkdown(tree) },
            {
              uri: uri.href,
              mimeType: 'application/json',
              text: JSON.stringify(agentPlan(tree, view.me, view.treeHash(tree.plan), 0), null, 2)
            }
          ]
        }
      }
    )
    return server
  }

  // Connections that stay open (stdio): a 2025-era client subscribes with resources/subscribe and
  // hears only of what it subscribed to; on a 2026-era one the SDK's listen router filters.
  const live = new Map<McpServer, { modern: boolean; uris: Set<string> }>()
  listeners.push(uri => {
    for (const [server, c] of live)
      if (c.modern || c.uris.has(uri)) server.server.sendResourceUpdated({ uri }).catch(() => {})
  })
  const connectionFactory: McpServerFactory = ctx => {
    const server = build()
    const c = { modern: ctx.era === 'modern', uris: new Set<string>() }
    server.server.setRequestHandler('resources/subscribe', req => {
      c.uris.add(req.params.uri)
      return {}
    })
    server.server.setRequestHandler('resources/unsubscribe', req => {
      c.uris.delete(req.params.uri)
      return {}
    })
    server.server.onclose = () => {
      live.delete(server)
    }
    live.set(server, c)
    return server
  }

  return {
    factory: () => build(),
    connectionFactory,
    onPlanChanged: fn => {
      listeners.push(fn)
    },
    close: () => {
      off()
      flush?.()
      tools.outside.stop()
    }
  }
}
