/** The offline plan shape for a learning plan: a language, an instrument, an exam, a skill, a race. */
import { part, type KindTable } from '../parts.js'

export const LEARNING: KindTable = {
  kind: 'learning',
  label: 'a learning plan',
  thing: 'the skill',
  alt: 'the subject',
  parts: [
    part(
      'target',
      'Set a measurable target',
      'the target is concrete (a level, an exam, a piece, a distance) and has a date',
      [
        ['Choose the target level', 'the level is named the way tests or teachers name it'],
        ['Set the target date', 'the date is in the calendar'],
        ['Pick how progress is measured', 'one test or recording measures progress', [0]]
      ]
    ),
    part(
      'baseline',
      'Assess the starting level',
      'a test or a self-check shows the current level and the biggest gaps',
      [
        ['Take a placement test', 'the score or level is recorded'],
        ['List the weakest areas', 'the three biggest gaps are written down', [0]],
        ['Record the baseline', 'the starting point is saved to compare against later', [0]]
      ]
    ),
    part(
      'resources',
      'Choose the learning resources',
      'one main course or book, one practice tool and one source of feedback are chosen',
      [
        ['Compare two or three courses', 'the courses are compared on level, cost and format'],
        ['Pick a practice app or tool', 'one tool for daily practice is installed'],
        ['Find a teacher or study partner', 'someone has agreed to help regularly']
      ],
      ['target', 'baseline', 'budget']
    ),
    part(
      'routine',
      'Build a study routine',
      'study sessions are in the calendar every week, with a fixed time and place',
      [
        ['Block study sessions in the calendar', 'the sessions for the next month are booked'],
        ['Prepare a place to study', 'the materials are ready in one place'],
        ['Track the sessions done', 'a log shows each session', [0]]
      ],
      ['resources', 'target', 'milestones']
    ),
    part(
      'practice',
      'Practise most days',
      'practice happens at least five days a week, mixing new material with review',
      [
        ['Practise for 20 minutes a day', 'the log shows five or more sessions a week'],
        ['Review old material weekly', 'each week starts with a review session'],
        ['Use it in a real situation each week', 'one real use per week is logged']
      ],
      ['resources', 'routine']
    ),
    part(
      'feedback',
      'Arrange regular feedback',
      'someone more advanced reviews the work at least every two weeks',
      [
        ['Find a tutor or a study group', 'a tutor or a group has agreed a regular slot'],
        ['Book a session every two weeks', 'the sessions are in the calendar', [0]],
        ['Note what to fix after each session', 'each session ends with one thing to fix', [1]]
      ],
      ['target']
    ),
    part(
      'milestones',
      'Set monthly milestones',
      'each month has a small goal that builds towards the target',
      [
        ['Split the target into monthly goals', 'each month has one goal'],
        ['Write a check for each month', 'each goal has a test that says whether it is met', [0]],
        ['Schedule the monthly checks', 'the check dates are in the calendar', [1]]
      ],
      ['target', 'baseline']
    ),
    part(
      'progress',
      'Check progress every month',
      'a monthly test or recording shows the progress since the last check',
      [
        ['Repeat the level test', 'a new score or recording is saved'],
        ['Compare with the last result', 'the change since the last check is written down', [0]],
        ['Adjust the plan', "the next month's focus reflects the result", [1]]
      ],
      ['routine', 'practice', 'milestones', 'baseline']
    ),
    part(
      'real',
      'Apply it in a real challenge',
      'the skill is used in one real situation: a conversation, a performance, a project or the exam',
      [
        ['Choose a real-world challenge', 'the challenge and its date are set'],
        ['Rehearse for the challenge', 'two rehearsals are done', [0]],
        ['Take the challenge and note the result', 'the result and the lessons are written down', [1]]
      ],
      ['progress', 'practice', 'feedback']
    ),
    part('budget', 'Budget the time and money', 'the hours per week and the cost of courses and materials are set', [
      ['Estimate the hours per week', 'a weekly number of hours is agreed with yourself and your household'],
      ['Price the courses and materials', 'the costs are listed'],
      ['Set a monthly spending limit', 'the limit covers the courses and materials', [1]]
    ]),
    part(
      'lapses',
      'Plan for lapses',
      'a plan says what to do after a missed week and who keeps you accountable',
      [
        ['Find an accountability partner', 'someone checks in every week'],
        ['Set a minimum daily habit', 'a five-minute minimum is defined for bad days'],
        ['Plan a restart after a missed week', 'the restart steps are written down']
      ],
      ['routine']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'target, resources, routine, progress checks, a real challenge; each phase needs the one before',
      parts: ['target', 'resources', 'routine', 'progress', 'real']
    },
    'by activity': {
      name: 'by kind of practice',
      why: 'one subgoal per kind of learning activity: study material, daily practice, feedback, real use, tests',
      parts: ['resources', 'practice', 'feedback', 'real', 'progress']
    },
    'by time': {
      name: 'by month',
      why: 'in time order: the target, monthly milestones, the routine, monthly checks, the final challenge',
      parts: ['target', 'milestones', 'routine', 'progress', 'real']
    },
    'by place': {
      name: 'by source of help',
      why: 'by who or what helps: teachers and partners, courses and tools, the routine at home, the accountability that keeps it going',
      parts: ['feedback', 'resources', 'routine', 'lapses', 'real']
    },
    'by resource': {
      name: 'by resource',
      why: 'by what learning consumes: time and money, materials, the weekly hours, feedback, and the checks that show it pays off',
      parts: ['budget', 'resources', 'routine', 'feedback', 'progress']
    }
  }
}
