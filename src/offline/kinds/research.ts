/** The offline plan shape for research or a decision: a question to answer, options to weigh, a choice to make. */
import { part, type KindTable } from '../parts.js'

export const RESEARCH: KindTable = {
  kind: 'research',
  label: 'research or a decision',
  thing: 'the question',
  alt: 'the decision',
  parts: [
    part(
      'question',
      'Frame the question',
      'one sentence states the question or the decision, who needs the answer and by when',
      [
        ['Write the question in one sentence', 'the sentence is specific enough to be answered'],
        ['Note who needs the answer and by when', 'the audience and the deadline are written down'],
        ['List what is already known', 'the known facts and assumptions are on one page', [0]]
      ]
    ),
    part(
      'criteria',
      'Set the decision criteria',
      'a short list of weighted criteria (cost, risk, time, fit) is agreed before options are compared',
      [
        ['List the criteria', 'four to six criteria are written down'],
        ['Weight each criterion', 'the weights add up to 100', [0]],
        ['Agree the criteria with the people affected', 'the people affected accept the criteria and weights', [1]]
      ],
      ['question']
    ),
    part(
      'options',
      'List the options',
      'at least three options, including doing nothing, are described in a line each',
      [
        ['Brainstorm the options', 'every idea is on the list, unjudged'],
        ['Include the do-nothing option', 'the status quo is on the list as an option'],
        ['Drop options that break a hard limit', 'each dropped option has the reason next to it', [0, 1]]
      ],
      ['question']
    ),
    part(
      'evidence',
      'Gather the evidence',
      'each option has facts, figures and sources behind it, with the gaps noted',
      [
        ['Search for existing studies and data', 'the best three sources per option are saved'],
        ['Interview two people with experience', 'notes from two conversations are saved'],
        ['Note the gaps in the evidence', 'what is still unknown is written down', [0, 1]]
      ],
      ['options', 'question', 'budget']
    ),
    part(
      'compare',
      'Compare the options',
      'a table scores every option against every criterion, with the reasons',
      [
        ['Score each option on each criterion', 'the table is full, each score with a reason'],
        ['Check the scores with a second person', 'a second person has challenged the scores', [0]],
        ['Test what would change the ranking', 'the assumptions the winner depends on are named', [0]]
      ],
      ['criteria', 'evidence', 'options', 'risks', 'pilot']
    ),
    part(
      'decide',
      'Decide and record why',
      'the choice, the reasons and the runner-up are written down and shared',
      [
        ['Choose the best option', 'one option is chosen by whoever decides'],
        ['Write a one-page summary', 'the page gives the choice, the reasons and the runner-up', [0]],
        ['Share the decision', 'everyone affected has the summary', [1]]
      ],
      ['compare', 'evidence', 'risks', 'stakeholders', 'pilot', 'criteria', 'options']
    ),
    part(
      'risks',
      'Assess the risks',
      'the main risks of the leading options are listed with likelihood, impact and a mitigation',
      [
        ['List what could go wrong', 'the main risks of each leading option are listed'],
        ['Rate likelihood and impact', 'each risk has a rating for both', [0]],
        ['Note a mitigation for each risk', 'each serious risk has a mitigation', [1]]
      ],
      ['options', 'evidence']
    ),
    part(
      'stakeholders',
      'Consult the people affected',
      'everyone the decision affects has been asked and their views are noted',
      [
        ['List who is affected', 'each person or group is on the list'],
        ['Ask each for their view', 'every person on the list has been asked', [0]],
        ['Summarise the views', 'one page gives the views for and against', [1]]
      ]
    ),
    part(
      'pilot',
      'Pilot the leading option',
      'a small, cheap trial of the leading option has run and its result is noted',
      [
        ['Design a small trial', 'the trial, its length and its measure are written down'],
        ['Run the trial', 'the trial ran as designed', [0]],
        ['Measure the result', 'the result is compared with the expectation', [1]]
      ],
      ['options', 'evidence']
    ),
    part(
      'later',
      'Review the decision later',
      'a date is set to check whether the decision worked, with what to measure',
      [
        ['Pick the review date', 'the date is in the calendar'],
        ['Choose what to measure', 'one or two measures are written down'],
        ['Record the outcome on the date', 'the review note says whether to keep or change course', [0, 1]]
      ],
      ['decide']
    ),
    part(
      'budget',
      'Set the time and money for the research',
      'how many hours and how much money the research may take is agreed',
      [
        ['Estimate the hours needed', 'an estimate in hours is written down'],
        ['Set a spending limit', 'the limit for data, tools or experts is agreed'],
        ['Book research time in the calendar', 'the hours are blocked', [0]]
      ],
      ['question']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'question, options, evidence, comparison, decision; each step needs the one before',
      parts: ['question', 'options', 'evidence', 'compare', 'decide']
    },
    'by activity': {
      name: 'by line of enquiry',
      why: 'one subgoal per way of finding out: the evidence, the people affected, the risks, a small trial, then the decision',
      parts: ['evidence', 'stakeholders', 'risks', 'pilot', 'decide']
    },
    'by time': {
      name: 'by time',
      why: 'now, soon, and later: frame the question, find out, compare, decide, and check later whether it worked',
      parts: ['question', 'evidence', 'compare', 'decide', 'later']
    },
    'by place': {
      name: 'by stakeholder',
      why: 'by who has a say: the people affected, the criteria they accept, the options, the comparison and the decision',
      parts: ['stakeholders', 'criteria', 'options', 'compare', 'decide']
    },
    'by resource': {
      name: 'by resource',
      why: 'by what the answer costs: time and money for the research, the options, the evidence, the risks, the choice',
      parts: ['budget', 'options', 'evidence', 'risks', 'decide']
    }
  }
}
