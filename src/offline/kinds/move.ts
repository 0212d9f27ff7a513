/** The offline plan shape for a move: a new flat, another city, another country. */
import { part, type KindTable } from '../parts.js'

export const MOVE: KindTable = {
  kind: 'move',
  label: 'a move',
  thing: 'the move',
  alt: 'the relocation',
  parts: [
    part('area', 'Choose the new area', 'a neighbourhood is chosen for commute, schools, cost and safety', [
      ['List what the area must offer', 'commute, schools, shops and cost limits are written down'],
      ['Compare two or three areas', 'each area is scored against the list', [0]],
      ['Visit the top area', 'a day there confirms or changes the choice', [1]]
    ]),
    part(
      'home',
      'Find the new home',
      'a lease or a purchase is signed for a home that fits, with the move-in date agreed',
      [
        ['Set the housing budget', 'the monthly or total limit is agreed'],
        ['View the shortlisted homes', 'two or more homes are seen in person or by video', [0]],
        ['Sign the lease or contract', 'the signed contract and the move-in date are saved', [1]]
      ],
      ['area', 'budget']
    ),
    part(
      'notice',
      'Give notice on the current home',
      'the landlord or the buyer has written notice and the end date fits the move',
      [
        ['Check the notice period', 'the notice period and the end date are known'],
        ['Send written notice', 'the notice is sent and its receipt confirmed', [0]],
        ['Book the final inspection', 'the handover date is agreed', [1]]
      ],
      ['home']
    ),
    part(
      'movers',
      'Book the movers',
      'a removal firm or a van is booked for the date, with the price and the insurance confirmed',
      [
        ['Collect three removal quotes', 'three quotes for the same inventory are in'],
        ['Hire a removal firm or a van', 'the booking is confirmed for the date', [0]],
        ['Confirm the date and insurance', 'the date, the times and the cover are in writing', [1]]
      ],
      ['home', 'budget', 'notice']
    ),
    part(
      'pack',
      'Pack the household',
      'everything is sorted, packed and labelled by room, with an essentials box ready',
      [
        ['Declutter room by room', 'what is not moving is sold, given away or recycled'],
        ['Pack and label the boxes', 'every box says its room and its contents', [0]],
        ['Prepare an essentials box', 'one box holds what the first night needs', [1]]
      ],
      ['movers']
    ),
    part(
      'admin',
      'Update addresses and services',
      'post, bank, employer, doctor and utilities have the new address, and the utilities work from day one',
      [
        ['Set up mail forwarding', 'mail forwarding starts on the moving date'],
        ['Transfer the utilities and internet', 'power, water and internet run at the new home from the first day'],
        ['Update the address everywhere', 'bank, employer, doctor and insurers have the new address']
      ],
      ['home']
    ),
    part(
      'family',
      'Prepare the household for the change',
      'schools, childcare, doctors and routines are arranged at the new place',
      [
        ['Enrol the children in new schools', 'each child has a school place from the right date'],
        ['Register with a new doctor', 'everyone is registered with a doctor near the new home'],
        ['Plan the first week for everyone', 'each person knows what the first week looks like']
      ],
      ['home']
    ),
    part(
      'day',
      'Run moving day',
      'everything is loaded, moved and unloaded, the old home is clean and the keys are handed over',
      [
        ['Supervise the loading', 'every box and piece of furniture is on the van'],
        ['Clean the old home', 'the old home is clean for the inspection', [0]],
        ['Unload room by room', 'each box is in its labelled room at the new home', [0]]
      ],
      ['pack', 'movers', 'notice', 'admin']
    ),
    part(
      'settle',
      'Settle into the new home',
      'the essentials work, the boxes are unpacked and the household knows the neighbourhood',
      [
        ['Unpack the essentials first', 'beds, kitchen and bathroom work on the first night'],
        ['Check the meters and utilities', 'the meter readings are recorded and everything works'],
        ['Explore the neighbourhood', 'shops, transport and a doctor are found']
      ],
      ['day']
    ),
    part(
      'budget',
      'Set the moving budget',
      'the costs of deposit, movers, travel and overlapping rent are estimated and covered',
      [
        ['Estimate the moving costs', 'each cost is listed with an estimate'],
        ['Set aside the deposit', 'the deposit money is ready'],
        ['Track the spending', 'actual costs are compared with the estimate', [0]]
      ]
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'area, home, movers, packing, moving day; each phase needs the one before',
      parts: ['area', 'home', 'movers', 'pack', 'day']
    },
    'by activity': {
      name: 'by task',
      why: 'one subgoal per kind of task: money, the new home, paperwork, packing, the removal',
      parts: ['budget', 'home', 'admin', 'pack', 'movers']
    },
    'by time': {
      name: 'by weeks before the move',
      why: 'in the order the work falls due: notice, movers, paperwork, packing, the day itself',
      parts: ['notice', 'movers', 'admin', 'pack', 'day']
    },
    'by place': {
      name: 'by place',
      why: 'by where the work happens: choosing the new area and home, leaving the old one, the road between, arriving',
      parts: ['area', 'home', 'notice', 'day', 'settle']
    },
    'by resource': {
      name: 'by resource',
      why: "by what the move consumes: money, housing, the removal, the paperwork, the household's time and care",
      parts: ['budget', 'home', 'movers', 'admin', 'family']
    }
  }
}
