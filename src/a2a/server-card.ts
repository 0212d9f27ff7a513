import type { AgentCard } from '@a2a-js/sdk'

/**
 * The Agent Card at /.well-known/agent-card.json: who the swarm is, its one
 * skill, streaming on, push notifications off, and the bearer token every
 * call needs. `url` is the JSON-RPC endpoint as the client reached it.
 */
export function agentCard(swarm: string, version: string, url: string): AgentCard {
  return {
    name: `plan-swarm "${swarm}"`,
    description:
      `A leaderless planning swarm ("${swarm}"): give it a goal and its peers split it into a tree of ` +
      'subgoals, a committee votes on each split, executors do the leaves, and the results roll up into one ' +
      'deliverable. Every plan the swarm holds is a task here, whoever submitted it.',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            description: 'the token the node printed at start with --a2a (PLAN_SWARM_A2A_TOKEN fixes it)',
            scheme: 'Bearer',
            bearerFormat: ''
          }
        }
      }
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'plan-and-do',
        name: 'Plan and carry out a goal',
        description:
          'Send the goal as a text part; a data part may carry plan parameters (maxDepth, budgetTokens, ' +
          'retainDays, review, executors, ...). The task id is the plan id; its status says how many tasks are ' +
          'done, and the results and the deliverable come as artifacts. A follow-up message on the task raises ' +
          'its budget ({"budgetTokens": N}), amends its committee, or retries a failed task.',
        tags: ['planning', 'decomposition', 'multi-agent', 'swarm'],
        examples: ['plan a two-week trip to Japan', 'plan the launch of a small open-source library'],
        inputModes: ['text/plain', 'application/json'],
        outputModes: ['text/plain'],
        securityRequirements: []
      }
    ],
    signatures: []
  }
}
