/** The offline plan shape for an event or gathering: a party, a wedding, a meetup, a book swap. */
import { part, type KindTable } from '../parts.js'

export const EVENT: KindTable = {
  kind: 'event',
  label: 'an event or gathering',
  thing: 'the event',
  alt: 'the day',
  parts: [
    part(
      'basics',
      'Set the date, size and budget',
      'the date, the expected number of people and a total budget are written down and agreed',
      [
        ['Pick two candidate dates', 'two dates are checked against holidays and other local events'],
        ['Estimate the number of guests', 'a head-count range is written down'],
        ['Set the total budget', 'a budget with a 10% reserve is agreed by whoever pays', [1]]
      ]
    ),
    part(
      'venue',
      'Book the venue',
      'a venue that fits the head count is booked for the date, with access and facilities confirmed in writing',
      [
        ['List venues that fit the head count', 'three or more venues with price and capacity are listed'],
        ['Visit the two best venues', 'access, facilities and terms are known for both', [0]],
        ['Sign the booking and pay the deposit', 'the booking confirmation is saved', [1]]
      ],
      ['basics']
    ),
    part(
      'programme',
      'Plan the programme',
      'a running order lists each item with its start time and who leads it',
      [
        ['Draft the running order', 'every item has a start time and a length'],
        ['Confirm who leads each item', 'each item has a named lead who said yes', [0]],
        ['Prepare a bad-weather fallback', 'a plan B for rain or no-shows is written down', [0]]
      ],
      ['basics']
    ),
    part(
      'supplies',
      'Arrange food, equipment and helpers',
      'every supplier and helper has confirmed what they bring and when',
      [
        ['List what the day needs', 'food, drinks, furniture, sound and signage are on one list'],
        ['Book the suppliers', 'each supplier has confirmed the date, the amount and the price', [0]],
        ['Recruit helpers for set-up and clean-up', 'enough helpers have said yes for each shift', [0]]
      ],
      ['venue']
    ),
    part(
      'invite',
      'Invite the guests',
      'everyone on the guest list has the date, the place and how to reply',
      [
        ['Draft the guest list', 'names and contact details are in one list'],
        ['Send the invitations', 'every guest has the date, place, time and how to reply', [0]],
        ['Track the replies', 'a reply count is updated every week', [1]]
      ],
      ['venue']
    ),
    part(
      'promote',
      'Promote {thing}',
      'the announcement is where the audience will see it, at least three weeks before',
      [
        ['Write the announcement', 'the text gives what, when, where and who it is for'],
        ['Post it on local channels', 'it is on noticeboards, local groups and social media', [0]],
        ['Send a reminder a week before', 'a reminder has gone out through the same channels', [1]]
      ],
      ['venue']
    ),
    part(
      'permits',
      'Check permits and insurance',
      'every permit, licence or insurance the venue or the council requires is in place',
      [
        ['Ask the venue what it requires', 'the venue rules and requirements are written down'],
        ['Apply for the permits needed', 'each required permit is applied for or granted', [0]],
        ['Confirm the insurance cover', 'the cover and its limits are in writing', [0]]
      ],
      ['venue']
    ),
    part('roles', 'Assign the organising roles', 'each area (venue, food, guests, programme) has one named owner', [
      ['List the organising tasks', 'every task is on one shared list'],
      ['Find an owner for each task', 'each task has a named owner who agreed', [0]],
      ['Set a weekly check-in', 'a short weekly call or message thread is agreed', [1]]
    ]),
    part(
      'costs',
      'Track the costs',
      'every cost is recorded against the budget and the total stays within it',
      [
        ['Set up a cost sheet', 'one sheet lists each cost line with its budget'],
        ['Collect quotes from suppliers', 'each cost line has a quote or a price', [0]],
        ['Check the spending weekly', 'actual costs are compared with the budget every week', [1]]
      ],
      ['basics']
    ),
    part(
      'early',
      'Settle the essentials 8 weeks ahead',
      'the date, the budget and the venue are fixed two months before',
      [
        ['Fix the date', 'one date is chosen and shared'],
        ['Agree the budget', 'the total and who pays are agreed'],
        ['Reserve the venue', 'the venue is held for the date', [0, 1]]
      ]
    ),
    part(
      'month',
      'Invite and book 4 weeks ahead',
      'invitations are out and suppliers are booked a month before',
      [
        ['Send the invitations', 'every guest has been invited'],
        ['Book food and equipment', 'each supplier has confirmed'],
        ['Recruit the helpers', 'each shift has enough helpers']
      ],
      ['early']
    ),
    part(
      'week',
      'Confirm everything in the final week',
      'numbers, suppliers and helpers are confirmed and the running order is printed',
      [
        ['Confirm numbers with the suppliers', 'the final head count is with every supplier'],
        ['Remind the guests', 'every guest has a reminder with the practical details'],
        ['Print the running order', 'every helper has the running order and a contact list', [0]]
      ],
      ['month']
    ),
    part(
      'day',
      'Run the day',
      'it happens as planned, with someone in charge of set-up, the running order and clean-up',
      [
        ['Set up the venue', 'the room, signage and equipment are ready an hour before the start'],
        ['Brief the helpers', 'every helper knows their job and whom to ask', [0]],
        ['Clear up and return the venue', 'the venue is handed back as it was found', [1]]
      ],
      ['programme', 'supplies', 'invite', 'promote', 'week', 'permits', 'roles']
    ),
    part(
      'after',
      'Thank people and settle the bills',
      'helpers and suppliers are thanked, every bill is paid and the lessons are written down',
      [
        ['Thank the helpers and guests', 'a thank-you has gone to everyone who helped'],
        ['Pay the outstanding bills', 'every invoice is paid and filed'],
        ['Record what to repeat next time', 'a short list of what worked and what to change is saved']
      ],
      ['day']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'from the basics to the venue, the guests and the suppliers, then the day itself; each phase needs the one before',
      parts: ['basics', 'venue', 'invite', 'supplies', 'day']
    },
    'by activity': {
      name: 'by area of work',
      why: 'one subgoal per area someone can own: venue, programme, supplies, publicity, costs',
      parts: ['venue', 'programme', 'supplies', 'promote', 'costs']
    },
    'by time': {
      name: 'by time before the day',
      why: 'in the order the work falls due: two months ahead, a month ahead, the final week, the day, the week after',
      parts: ['early', 'month', 'week', 'day', 'after']
    },
    'by place': {
      name: 'by people involved',
      why: 'by who has to act: the organisers, the guests, the suppliers and helpers, the venue and the council',
      parts: ['roles', 'invite', 'supplies', 'permits', 'day']
    },
    'by resource': {
      name: 'by resource',
      why: 'by what the event consumes: money, space, supplies and people, and the permits that allow it',
      parts: ['basics', 'costs', 'venue', 'supplies', 'permits']
    }
  }
}
