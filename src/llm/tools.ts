/**
 * The tools a model is forced to call: one per question, with JSON Schemas
 * that state the same limits the validators (validate.ts) enforce, so a model
 * that follows the schema passes validation the first time.
 */
import {
  MAX_DETAIL_CHARS,
  MAX_NOTES_CHARS,
  MAX_OUTPUT_CHARS,
  MAX_RATIONALE_CHARS,
  MAX_SCORE,
  MAX_NEEDS,
  MAX_TITLE_CHARS
} from '../core/limits.js'

export type JsonSchema = Readonly<Record<string, unknown>>

/** A tool as both wire formats describe it: a name, what it is for, and its input schema. */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly schema: JsonSchema
}

export const SPLIT_TOOL = 'propose_split'
export const SCORE_TOOL = 'score_proposals'
export const RESULT_TOOL = 'report_result'
export const REVIEW_TOOL = 'review_result'

export function splitTool(minChildren: number, maxChildren: number, offered: readonly string[] = []): ToolSpec {
  const needs =
    offered.length === 0
      ? {}
      : {
          needs: {
            type: 'array',
            items: { type: 'string', enum: [...offered] },
            minItems: 1,
            maxItems: MAX_NEEDS,
            description: 'the tools or capabilities an executor must offer to do it; leave out when any executor can'
          }
        }
  return {
    name: SPLIT_TOOL,
    description: `Propose a split of the node into ${minChildren}..${maxChildren} subgoals.`,
    schema: {
      type: 'object',
      properties: {
        subgoals: {
          type: 'array',
          minItems: minChildren,
          maxItems: maxChildren,
          items: {
            type: 'object',
            properties: {
              title: {
                type: 'string',
                minLength: 1,
                maxLength: MAX_TITLE_CHARS,
                description: 'short imperative title, unique among the siblings'
              },
              detail: {
                type: 'string',
                maxLength: MAX_DETAIL_CHARS,
                description: 'what the subgoal covers and what done looks like'
              },
              leaf: {
                type: 'boolean',
                description: 'true when small and concrete enough to carry out directly, without a further split'
              },
              dependsOn: {
                type: 'array',
                items: { type: 'integer', minimum: 0, maximum: maxChildren - 1 },
                description:
                  'zero-based indexes of sibling subgoals whose results this one needs first; never itself, no cycles'
              },
              ...needs
            },
            required: ['title', 'detail', 'leaf', 'dependsOn'],
            additionalProperties: false
          }
        },
        rationale: {
          type: 'string',
          maxLength: MAX_RATIONALE_CHARS,
          description: 'why this split covers the node without overlap'
        }
      },
      required: ['subgoals', 'rationale'],
      additionalProperties: false
    }
  }
}

/** Proposals are named by labels (P1, P2, ...) in prompts; the enum lists them so the model cannot invent one. */
export function scoreTool(labels: readonly string[]): ToolSpec {
  return {
    name: SCORE_TOOL,
    description: 'Score every proposal and choose the one to accept, or none.',
    schema: {
      type: 'object',
      properties: {
        scores: {
          type: 'array',
          minItems: labels.length,
          maxItems: labels.length,
          items: {
            type: 'object',
            properties: {
              proposal: { type: 'string', enum: [...labels] },
              score: { type: 'integer', minimum: 0, maximum: MAX_SCORE },
              notes: { type: 'string', maxLength: MAX_NOTES_CHARS, description: 'the reasons for the score, briefly' }
            },
            required: ['proposal', 'score', 'notes'],
            additionalProperties: false
          }
        },
        choice: {
          type: ['string', 'null'],
          enum: [...labels, null],
          description: 'the label of the proposal to accept, or null if none is good enough'
        },
        notes: {
          type: 'string',
          maxLength: MAX_NOTES_CHARS,
          description: 'overall notes; if you choose none, what a better split would do'
        }
      },
      required: ['scores', 'choice', 'notes'],
      additionalProperties: false
    }
  }
}

export function resultTool(): ToolSpec {
  return {
    name: RESULT_TOOL,
    description: 'Report the result of the task.',
    schema: {
      type: 'object',
      properties: {
        output: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_OUTPUT_CHARS,
          description: 'the result itself, as plain text or markdown'
        }
      },
      required: ['output'],
      additionalProperties: false
    }
  }
}

export function reviewTool(): ToolSpec {
  return {
    name: REVIEW_TOOL,
    description: 'Accept or reject the result of a task.',
    schema: {
      type: 'object',
      properties: {
        verdict: { type: 'string', enum: ['accept', 'reject'] },
        notes: { type: 'string', maxLength: MAX_NOTES_CHARS, description: 'why; when rejecting, what must change' }
      },
      required: ['verdict', 'notes'],
      additionalProperties: false
    }
  }
}
