/**
 * What a step's leading verb says about it: what done looks like, the steps
 * it splits into when it is too big to be a leaf, and the checklist an
 * offline executor hands back for it. One guide per family of verbs
 * ("book", "reserve", "rent" are all bookings), a general one for the rest.
 */
import type { StepRow } from './parts.js'
import { words } from './text.js'

export interface Guide {
  /** The kind of work, for rationales: "a booking". */
  readonly name: string
  readonly verbs: readonly string[]
  /** Completes "Done when ...". */
  readonly done: string
  /** Leaf steps for a node of this kind that the plan's shape does not know. */
  readonly steps: readonly StepRow[]
  /** What someone doing the step by hand should tick off. */
  readonly checklist: readonly string[]
}

export const GUIDES: readonly Guide[] = [
  {
    name: 'a booking',
    verbs: ['book', 'reserve', 'rent', 'hire', 'secure'],
    done: 'the booking is confirmed in writing and the confirmation is saved',
    steps: [
      ['Compare two or three options', 'the options are compared on price, dates and terms'],
      ['Choose the best option', 'one option is chosen with a reason', [0]],
      ['Confirm the booking', 'the confirmation is saved', [1]]
    ],
    checklist: [
      'Compare at least two options on price, dates and cancellation terms',
      'Check the dates against the rest of the plan',
      'Book, and save the confirmation and its reference',
      'Note the cost against the budget'
    ]
  },
  {
    name: 'a purchase',
    verbs: ['buy', 'order', 'purchase', 'pay', 'price'],
    done: 'it is paid for within the budget and the receipt is kept',
    steps: [
      ['List what exactly is needed', 'the model, size or quantity is written down'],
      ['Compare prices in two places', 'the best price is known', [0]],
      ['Buy and keep the receipt', 'it is bought and the receipt is saved', [1]]
    ],
    checklist: [
      'Write down exactly what is needed (model, size, quantity)',
      'Check the price in at least two places',
      'Confirm the delivery or pick-up date',
      'Pay by a method with buyer protection and keep the receipt'
    ]
  },
  {
    name: 'writing',
    verbs: ['write', 'draft', 'outline', 'document', 'summarise', 'summarize', 'edit', 'revise', 'proofread', 'format'],
    done: 'a written version exists and someone else has read it',
    steps: [
      ['List the points to cover', 'the points are in order'],
      ['Write a first version', 'every point has text', [0]],
      ['Revise after one read-through', 'a second reader finds it clear', [1]]
    ],
    checklist: [
      'List the points it must cover, in order',
      'Write a first version without stopping to edit',
      'Read it aloud once and fix what stumbles',
      'Save it where the others can find it'
    ]
  },
  {
    name: 'a check',
    verbs: ['check', 'review', 'verify', 'test', 'audit', 'inspect', 'assess', 'confirm', 'measure', 'track', 'triage'],
    done: 'the check is done and every problem found is listed with an owner',
    steps: [
      ['List what to check', 'the checklist is written down'],
      ['Run the check', 'every item is marked pass or fail', [0]],
      ['Record the problems found', 'each problem has an owner', [1]]
    ],
    checklist: [
      'Write down what "good" looks like before starting',
      'Go through each item and mark it pass or fail',
      'List every problem with an owner and a date',
      'Repeat the check once the problems are fixed'
    ]
  },
  {
    name: 'finding out',
    verbs: [
      'research',
      'find',
      'gather',
      'collect',
      'list',
      'identify',
      'read',
      'compare',
      'shortlist',
      'explore',
      'search',
      'interview',
      'survey',
      'brainstorm',
      'estimate',
      'analyse',
      'analyze'
    ],
    done: 'the findings are written down in one place, with their sources',
    steps: [
      ['List the questions to answer', 'the questions are written down'],
      ['Search the best sources', 'each question has an answer or a lead', [0]],
      ['Summarise the findings', 'one page holds the findings and sources', [1]]
    ],
    checklist: [
      'Write down the questions to answer',
      'Look in at least two independent sources',
      'Note each finding with its source',
      'Summarise what was found in a few lines'
    ]
  },
  {
    name: 'a decision',
    verbs: [
      'choose',
      'decide',
      'pick',
      'select',
      'rank',
      'agree',
      'set',
      'define',
      'fix',
      'frame',
      'weight',
      'rate',
      'score'
    ],
    done: 'the choice is made and recorded with the reason',
    steps: [
      ['List the options', 'two or more options are written down'],
      ['Compare them against the goal', 'each option has its pros and cons', [0]],
      ['Record the choice and why', 'the choice and the reason are saved', [1]]
    ],
    checklist: [
      'List the options, including doing nothing',
      'Compare them on what matters for the goal',
      'Choose, and write down why in one sentence',
      'Tell the people the choice affects'
    ]
  },
  {
    name: 'getting in touch',
    verbs: [
      'send',
      'email',
      'invite',
      'contact',
      'call',
      'ask',
      'share',
      'announce',
      'post',
      'tell',
      'brief',
      'promote',
      'remind',
      'thank',
      'consult',
      'notify',
      'involve',
      'recruit',
      'negotiate'
    ],
    done: 'the message has reached everyone concerned and the replies are tracked',
    steps: [
      ['List who to reach', 'the names and contacts are on one list'],
      ['Draft the message', 'the message says what, when and what to do', [0]],
      ['Send it and track the replies', 'every reply is noted', [1]]
    ],
    checklist: [
      'List who must hear it, with their contact details',
      'Draft the message: what, when, and what they should do',
      'Send it, and note who has replied',
      'Follow up with everyone who has not replied after a few days'
    ]
  },
  {
    name: 'arranging',
    verbs: [
      'plan',
      'schedule',
      'allocate',
      'prepare',
      'organise',
      'organize',
      'arrange',
      'assign',
      'budget',
      'block',
      'map',
      'design',
      'sketch'
    ],
    done: 'a written plan with dates and owners exists',
    steps: [
      ['List the pieces to arrange', 'every piece is on one list'],
      ['Set a date and an owner for each', 'each piece has both', [0]],
      ['Share the arrangement', 'everyone involved has it', [1]]
    ],
    checklist: [
      'List everything that needs arranging',
      'Give each item a date and an owner',
      'Check the dates against each other and the deadline',
      'Share the arrangement with everyone involved'
    ]
  },
  {
    name: 'making',
    verbs: [
      'build',
      'create',
      'implement',
      'develop',
      'install',
      'deploy',
      'publish',
      'release',
      'submit',
      'tag',
      'launch',
      'ship',
      'automate',
      'repair',
      'renovate',
      'deliver',
      'print',
      'upload',
      'register',
      'apply',
      'sign',
      'transfer'
    ],
    done: 'it is done, it works, and the result is recorded',
    steps: [
      ['List what it must include', 'the requirements are written down'],
      ['Carry out the work', 'the work is finished', [0]],
      ['Test the result', 'the result meets the requirements', [1]]
    ],
    checklist: [
      'Write down what it must include or do',
      'Do the smallest complete version first',
      'Test the result against what was written down',
      'Record where the result is and how to use it'
    ]
  },
  {
    name: 'going somewhere',
    verbs: [
      'travel',
      'fly',
      'visit',
      'see',
      'move',
      'pack',
      'spend',
      'return',
      'run',
      'host',
      'meet',
      'settle',
      'unpack',
      'supervise',
      'clean',
      'clear',
      'start',
      'take',
      'use'
    ],
    done: 'it happened as planned and any changes are noted',
    steps: [
      ['Prepare what is needed', 'tickets, documents and kit are ready'],
      ['Carry it out', 'it happened as planned', [0]],
      ['Note what changed', 'changes and follow-ups are written down', [1]]
    ],
    checklist: [
      'Check the time, the place and what to bring',
      'Prepare tickets, documents and kit the day before',
      'Do it, keeping a note of anything that changes',
      'Write down the follow-ups afterwards'
    ]
  },
  {
    name: 'learning',
    verbs: ['learn', 'practise', 'practice', 'study', 'train', 'rehearse', 'teach', 'repeat'],
    done: 'the session happened and the progress is noted',
    steps: [
      ['Choose what to practise', 'one focus is chosen'],
      ['Practise in short sessions', 'the sessions are logged', [0]],
      ['Test what stuck', 'a short test shows the progress', [1]]
    ],
    checklist: [
      'Pick one thing to focus on',
      'Practise in short, regular sessions',
      'Test yourself at the end of the week',
      'Note what to work on next'
    ]
  }
]

/** The guide for a text with no known verb. */
export const GENERAL_GUIDE: Guide = {
  name: 'a task',
  verbs: [],
  done: 'the step is finished and its outcome is noted in the plan',
  steps: [
    ['List what it needs', 'the requirements are written down'],
    ['Carry out the main part', 'the main part is finished', [0]],
    ['Check the result', 'the result meets the requirements', [1]]
  ],
  checklist: [
    'Write down what done looks like for this step',
    'Do the smallest piece first',
    'Check the result against what done looks like',
    'Record the outcome in the plan'
  ]
}

const BY_VERB = new Map(GUIDES.flatMap(g => g.verbs.map(v => [v, g] as const)))

/** The guide for a step, by its first word ("Book the venue" -> the booking guide), or the general one. */
export function guideFor(text: string): Guide {
  const first = words(text)[0]
  return (first === undefined ? undefined : BY_VERB.get(first)) ?? GENERAL_GUIDE
}

/** Extra leaf steps for when a plan asks for more children than a part has. */
export const PADDING_STEPS: readonly StepRow[] = [
  ['Write down the outcome', 'the result of this part is noted in the plan'],
  ['Tell the people affected', 'everyone this part affects has been told the result'],
  ['Note the follow-ups', 'open questions and next actions are listed with owners'],
  ['Check the work with someone else', 'someone other than the doer has checked the result'],
  ['Keep the documents in one place', 'receipts, confirmations and drafts are in the shared folder'],
  ['Schedule a check a week later', 'a date to revisit this part is in the calendar']
]
