/**
 * The offline plan shape for a goal of no recognised kind (or in a language
 * the cue table does not know): a plain project. Its titles never name the
 * subject, so they read sensibly under any goal.
 */
import { part, type KindTable } from '../parts.js'

export const GENERIC: KindTable = {
  kind: 'generic',
  label: 'a project',
  thing: 'the project',
  alt: 'the work',
  parts: [
    part(
      'scope',
      'Define the scope',
      'a one-page brief says what "{goal}" must achieve, by when, for whom, and what is out of scope',
      [
        ['Write the goal in one sentence', 'the sentence says what will be different when it is done'],
        ['List the constraints', 'budget, deadline and people available are written down'],
        ['Agree how success is judged', 'two or three measurable criteria are agreed', [0]]
      ]
    ),
    part(
      'options',
      'Research the options',
      'two or three approaches are described with their cost, time and risk',
      [
        ['List the possible approaches', 'two or three approaches have one line each'],
        ['Estimate cost and time for each', 'each approach has a rough cost and duration', [0]],
        ['Note the main risk of each', 'each approach has its biggest risk next to it', [0]]
      ],
      ['scope']
    ),
    part(
      'choose',
      'Choose the approach',
      'one approach is chosen, with the reasons, the milestones and the owners',
      [
        ['Pick one approach', 'the choice is made by whoever decides'],
        ['Record the reasons', 'one paragraph says why this approach', [0]],
        ['Set milestones and owners', 'each milestone has a date and an owner', [0]]
      ],
      ['options']
    ),
    part(
      'work',
      'Carry out the main work',
      'the tasks of the chosen approach are done in order and progress is tracked',
      [
        ['Break the work into tasks', 'each task fits in a day or two'],
        ['Work through the tasks in order', 'the tasks are ticked off in the agreed order', [0]],
        ['Track progress weekly', 'a weekly note compares progress with the milestones', [0]]
      ],
      ['choose', 'scope', 'kickoff', 'materials', 'people', 'schedule', 'budget']
    ),
    part(
      'review',
      'Review the result',
      'the result is checked against the success criteria and the follow-ups are listed',
      [
        ['Check against the success criteria', 'each criterion is marked met or not met'],
        ['List the follow-ups', 'each open point has an owner', [0]],
        ['Share the result', 'everyone involved has the result and the follow-ups', [1]]
      ],
      ['work', 'risks', 'comms']
    ),
    part(
      'people',
      'Involve the people concerned',
      'everyone who is affected or must help knows their role and has agreed to it',
      [
        ['List who is affected or needed', 'each person or group is on one list'],
        ['Assign the responsibilities', 'each task has one named owner', [0]],
        ['Agree how to keep in touch', 'a channel and a rhythm for updates are agreed', [1]]
      ],
      ['scope']
    ),
    part('budget', 'Set the budget', 'the costs are estimated and a budget with a reserve is agreed', [
      ['Estimate the costs', 'each cost has an estimate'],
      ['Agree a total with a reserve', 'the total and a 10% reserve are agreed', [0]],
      ['Track the spending', 'actual spending is compared with the budget each month', [1]]
    ]),
    part(
      'materials',
      'Gather the materials and tools',
      'everything needed is listed and at hand before the work starts',
      [
        ['List the materials and tools', 'the list is complete for the first milestone'],
        ['Buy or borrow what is missing', 'everything on the list is at hand', [0]],
        ['Check everything works', 'each tool is tried once', [1]]
      ],
      ['budget', 'scope']
    ),
    part('schedule', 'Set the schedule', 'the deadline and the milestone dates are in a calendar everyone can see', [
      ['Set the deadline', 'one date is agreed'],
      ['Set the milestone dates', 'each milestone has a date before the deadline', [0]],
      ['Share the calendar', 'everyone involved has the dates', [1]]
    ]),
    part(
      'comms',
      'Keep people informed',
      'the people concerned get a short update at each milestone',
      [
        ['Draft the key messages', 'the main messages fit on half a page'],
        ['Send an update at each milestone', 'each milestone has an update sent', [0]],
        ['Answer the questions that come back', 'every question has an answer within a week', [1]]
      ],
      ['people', 'scope']
    ),
    part(
      'risks',
      'Plan for what could go wrong',
      'the main risks have a fallback and an owner',
      [
        ['List the main risks', 'the five likeliest problems are listed'],
        ['Note a fallback for each risk', 'each risk has a fallback', [0]],
        ['Assign an owner for each risk', 'each risk has a named owner', [1]]
      ],
      ['scope']
    ),
    part(
      'kickoff',
      'Start with a kick-off',
      'the goal, the deadline and the first tasks are agreed with everyone involved',
      [
        ['Agree the goal and the deadline', 'both are written down and shared'],
        ['List the first tasks', 'the tasks for the first week are listed', [0]],
        ['Assign the first tasks', 'each first task has an owner', [1]]
      ],
      ['schedule']
    ),
    part(
      'finish',
      'Close the open tasks',
      'every open task is finished or consciously dropped, and the result is ready',
      [
        ['List the open tasks', 'every unfinished task is on one list'],
        ['Finish or drop each task', 'each task is done or dropped with a reason', [0]],
        ['Check that everything is ready', 'a final walk through the result finds nothing missing', [1]]
      ],
      ['work']
    ),
    part(
      'lessons',
      'Record the lessons',
      'what went well and what to change next time is written down and shared',
      [
        ['Note what went well', 'three things that worked are written down'],
        ['Note what to change', 'three things to change are written down'],
        ['Share the lessons', 'the notes are where the next project will find them', [0, 1]]
      ],
      ['finish', 'review', 'work']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'scope, options, choice, the work itself, review; each phase needs the one before',
      parts: ['scope', 'options', 'choose', 'work', 'review']
    },
    'by activity': {
      name: 'by workstream',
      why: 'one subgoal per stream of work someone can own: people, materials, the work itself, communication',
      parts: ['people', 'materials', 'work', 'comms', 'review']
    },
    'by time': {
      name: 'by time',
      why: 'in the order things happen: the schedule, the kick-off, the bulk of the work, the final stretch, the lessons',
      parts: ['schedule', 'kickoff', 'work', 'finish', 'lessons']
    },
    'by place': {
      name: 'by stakeholder',
      why:
        'by who is involved: agreeing the scope, the people who help, keeping everyone informed, ' +
        'the risks they carry, the review with them',
      parts: ['scope', 'people', 'comms', 'risks', 'review']
    },
    'by resource': {
      name: 'by resource',
      why: 'by what the work consumes: money, time, materials and tools, and the risks to them; materials wait for the budget',
      parts: ['budget', 'schedule', 'materials', 'risks', 'work']
    }
  }
}
