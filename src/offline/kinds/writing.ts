/** The offline plan shape for a piece of writing: a proposal, a report, an article, a thesis, an application. */
import { part, type KindTable } from '../parts.js'

export const WRITING: KindTable = {
  kind: 'writing',
  label: 'a piece of writing',
  thing: 'the document',
  alt: 'the text',
  parts: [
    part(
      'brief',
      'Define the brief',
      'the reader, the purpose, the length, the format and the deadline are written down, with any funder or editor requirements',
      [
        ['Read the requirements closely', 'every requirement (format, length, deadline, criteria) is on a checklist'],
        ['Define the reader and the purpose', 'one sentence says who reads it and what they should do afterwards'],
        [
          'Note the deadline and the length limit',
          'the deadline and the word or page limit are in the calendar and on the checklist',
          [0]
        ]
      ]
    ),
    part(
      'material',
      'Gather the material',
      'the facts, figures, sources and quotes it needs are in one place, each with its source',
      [
        ['List the questions to answer', 'the open questions are written down'],
        ['Collect data and sources', 'each question has data or a source next to it', [0]],
        ['Interview the people who know', 'notes from two or three conversations are saved', [0]]
      ],
      ['brief']
    ),
    part(
      'outline',
      'Outline {thing}',
      'an outline lists every section with its main point and a word budget',
      [
        ['List the sections', 'the sections follow the required structure, or a logical one'],
        ['Note the main point of each section', 'each section has one sentence saying what it must establish', [0]],
        ['Set a word budget per section', 'the budgets add up to the length limit', [0]]
      ],
      ['brief', 'material']
    ),
    part(
      'draft',
      'Draft {thing}',
      'a complete first draft covers every section of the outline, within the length limit',
      [
        ['Write the summary first', 'a one-paragraph summary states the point, the plan and the ask'],
        ['Draft the main sections', 'every section of the outline has text', [0]],
        ['Add figures and references', 'every claim that needs a figure or a source has one', [1]]
      ],
      ['outline', 'material', 'schedule', 'contributors', 'practical']
    ),
    part(
      'feedback',
      'Collect feedback on the draft',
      'at least two readers have commented and every comment is applied or answered',
      [
        ['Choose two reviewers', 'one expert and one newcomer to the topic have agreed to read it'],
        ['Send the draft for comments', 'the reviewers have the draft and a date to reply', [0]],
        ['Apply the comments', 'each comment is applied or has a reason not to', [1]]
      ],
      ['draft']
    ),
    part(
      'polish',
      'Edit and proofread',
      'the text is within the limits, consistent in style and free of typos',
      [
        ['Cut to the length limit', 'the word or page count is within the limit'],
        ['Check the facts and figures', 'every number and name matches its source'],
        ['Proofread the final text', 'a last read finds no typos', [0, 1]]
      ],
      ['feedback', 'draft', 'opening', 'case', 'practical', 'close']
    ),
    part(
      'submit',
      'Submit {thing}',
      'it is submitted or published in the required format before the deadline, and the confirmation is saved',
      [
        ['Format to the requirements', 'fonts, layout, file type and attachments match the checklist'],
        ['Submit before the deadline', 'it is sent at least a day before the deadline', [0]],
        ['Save the confirmation', 'the receipt or publication link is saved', [1]]
      ],
      ['draft', 'polish', 'feedback', 'signoff', 'attachments']
    ),
    part(
      'opening',
      'Write the opening summary',
      'the first paragraph states the point in a few sentences a busy reader can act on',
      [
        ['Draft a one-paragraph summary', 'the paragraph says the need, the plan and the ask'],
        ['Test it on someone new to the topic', 'a newcomer can say back the point in their own words', [0]],
        ['Revise the summary', 'the summary reflects the newcomer test', [1]]
      ],
      ['brief']
    ),
    part(
      'case',
      'Build the main case',
      'the body sets out the argument or the plan, each claim with its evidence',
      [
        ['List the claims to make', 'three to five claims are written down'],
        ['Attach evidence to each claim', 'each claim has a figure, a source or an example', [0]],
        ['Draft the body sections', 'each claim has its own section', [1]]
      ],
      ['brief']
    ),
    part(
      'practical',
      'Set out the budget and timeline',
      'costs, milestones and who does what are in tables the reader can check',
      [
        ['Estimate each cost', 'every cost line has an amount and a reason'],
        ['Draw up the timeline', 'each milestone has a date'],
        ['Assign who does what', 'each task in the timeline has a named owner', [1]]
      ]
    ),
    part(
      'close',
      'Write the conclusion and the ask',
      'the ending says plainly what the reader should do next',
      [
        ['Summarise the main point', 'one paragraph sums up the case'],
        ['State the ask', 'the request (money, approval, action) is explicit', [0]],
        ['Add contact details', 'the reader knows whom to contact', [1]]
      ],
      ['case']
    ),
    part(
      'contributors',
      'Coordinate the contributors',
      'co-authors and partners agree on the main points and have sent their parts',
      [
        ['List who must contribute', 'each contributor and their part is on one list'],
        ['Ask each for their part and a date', 'every contributor has agreed a date', [0]],
        ['Collect the contributions', 'every part is in, or chased', [1]]
      ],
      ['brief']
    ),
    part(
      'signoff',
      'Secure the sign-off',
      'whoever must approve it has approved it in writing',
      [
        ['Identify who approves', 'the approvers are named'],
        ['Send the final draft for approval', 'each approver has the draft and a date', [0]],
        ['Record the approval', 'each approval is saved', [1]]
      ],
      ['draft', 'feedback', 'polish']
    ),
    part(
      'attachments',
      'Collect the supporting documents',
      'every letter, CV, figure or annex the requirements ask for is collected and checked',
      [
        ['List the required attachments', 'the list matches the requirements'],
        ['Request letters or documents from others', 'each request has a date', [0]],
        ['Check each attachment against the requirements', 'each attachment is the right format and length', [1]]
      ],
      ['brief']
    ),
    part(
      'schedule',
      'Plan back from the deadline',
      'a schedule counts back from the deadline with dates for outline, draft, review and submission',
      [
        ['Confirm the deadline', 'the exact date and time (and time zone) are known'],
        ['Set a date for each stage', 'outline, draft, feedback and submission each have a date', [0]],
        ['Block writing time in the calendar', 'the writing sessions are booked', [1]]
      ]
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'brief, outline, draft, feedback, submission; each phase needs the one before, so the draft comes before the review',
      parts: ['brief', 'outline', 'draft', 'feedback', 'submit']
    },
    'by activity': {
      name: 'by section',
      why:
        'one subgoal per part of the text a reader meets: the summary, the main case, the budget ' +
        'and timeline, the ending, then the final edit',
      parts: ['opening', 'case', 'practical', 'close', 'polish']
    },
    'by time': {
      name: 'by deadline',
      why: 'planned back from the deadline: schedule, draft, feedback, edit, submit',
      parts: ['schedule', 'draft', 'feedback', 'polish', 'submit']
    },
    'by place': {
      name: 'by people involved',
      why: 'by who has to act: the contributors, the writer, the reviewers, the approvers',
      parts: ['contributors', 'draft', 'feedback', 'signoff', 'submit']
    },
    'by resource': {
      name: 'by input',
      why: 'by what the text is made from: material, supporting documents, budget and timeline figures, then the draft that uses them',
      parts: ['material', 'attachments', 'practical', 'draft', 'submit']
    }
  }
}
