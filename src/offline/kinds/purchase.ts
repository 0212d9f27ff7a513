/** The offline plan shape for a purchase: a car, a laptop, a sofa, a house. */
import { part, type KindTable } from '../parts.js'

export const PURCHASE: KindTable = {
  kind: 'purchase',
  label: 'a purchase',
  thing: 'the purchase',
  alt: 'the item',
  parts: [
    part(
      'needs',
      'Define what you need',
      'a list separates the must-haves from the nice-to-haves, with a maximum price',
      [
        ['List the must-have features', 'every must-have is on the list'],
        ['List the nice-to-haves', 'the nice-to-haves are ranked'],
        ['Set the maximum price', 'one number, including delivery and fees, is agreed', [0]]
      ]
    ),
    part(
      'budget',
      'Set the budget',
      'a total including delivery, fees and running costs is set, and how it will be paid',
      [
        ['Estimate the running costs', 'yearly costs (energy, insurance, servicing) are estimated'],
        ['Decide how to pay', 'cash, savings or finance is chosen'],
        ['Set the total limit', 'the limit covers the price and the first year of running costs', [0, 1]]
      ],
      ['needs']
    ),
    part(
      'market',
      'Research the market',
      'a shortlist of three models or sellers meets the must-haves, with prices',
      [
        ['Read independent reviews', 'two or three trusted reviews per model are read'],
        ['Compare prices across sellers', 'the best price for each model is noted'],
        ['Shortlist three options', 'three options that meet every must-have are listed', [0, 1]]
      ],
      ['needs', 'owners']
    ),
    part(
      'compare',
      'Compare the shortlist',
      'the shortlisted options are compared on price, quality, warranty and running costs in one table',
      [
        ['Compare the total cost of each', 'price plus running costs is worked out for each'],
        ['Check warranty and return terms', 'the terms of each are noted'],
        ['Rank the options', 'the options are ranked with a reason', [0, 1]]
      ],
      ['market', 'budget']
    ),
    part(
      'inspect',
      'Try the top choice',
      'the top choice has been seen, tried or test-driven, and any defects are noted',
      [
        ['Arrange a viewing or trial', 'a time and place are agreed with the seller'],
        ['Check the condition against a checklist', 'each item of the checklist is ticked or noted', [0]],
        ['Note any defects for the negotiation', 'the defects and their repair costs are written down', [1]]
      ],
      ['compare', 'market']
    ),
    part(
      'buy',
      'Buy {thing}',
      'it is paid for at or below the budget, with the receipt and the warranty papers saved',
      [
        ['Negotiate the price', 'the final price is agreed in writing'],
        ['Pay by a protected method', 'the payment has buyer protection', [0]],
        ['Keep the receipt and warranty', 'the receipt and the warranty are saved', [1]]
      ],
      ['compare', 'inspect', 'finance', 'market', 'budget', 'timing']
    ),
    part(
      'after',
      'Set it up after delivery',
      'it is delivered, checked, registered and insured where needed',
      [
        ['Check it on delivery', 'any damage is reported the same day'],
        ['Register the warranty', 'the warranty is registered with the maker'],
        ['Arrange insurance if needed', 'the cover starts on the day of delivery']
      ],
      ['buy']
    ),
    part(
      'finance',
      'Arrange the payment',
      'the money is available: savings moved, or a finance offer compared and accepted',
      [
        ['Check the savings available', 'the amount that can be spent is known'],
        ['Compare finance offers', 'the total cost of two or three offers is compared'],
        ['Arrange the funds', 'the money is available before the purchase', [0, 1]]
      ],
      ['budget', 'needs']
    ),
    part(
      'old',
      'Sell or recycle the old one',
      'whatever this replaces is sold, given away or recycled',
      [
        ['Value the old one', 'a fair price is found from similar listings'],
        ['List it for sale', 'the listing is online with photos', [0]],
        ['Recycle it if unsold', 'it is recycled or donated within a month', [1]]
      ],
      ['buy']
    ),
    part('owners', 'Ask people who own one', 'two or three owners have said what they like and what they regret', [
      ['Find two or three owners', 'two or three owners agreed to talk'],
      ['Ask what they would change', 'their answers are noted', [0]],
      ['Note the common complaints', 'the complaints shared by several owners are listed', [1]]
    ]),
    part(
      'timing',
      'Pick the right time to buy',
      'the purchase is timed for sales, model changes or the date it is really needed',
      [
        ['Check when prices usually drop', 'the usual sale periods are noted'],
        ['Decide the latest date to buy', 'the date by which it is needed is set'],
        ['Set a price alert', 'an alert fires when the price drops below the target', [0]]
      ],
      ['needs']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'needs, market, shortlist, trial, purchase; each step needs the one before',
      parts: ['needs', 'market', 'compare', 'inspect', 'buy']
    },
    'by activity': {
      name: 'by task',
      why: 'one subgoal per kind of task: research, advice from owners, comparison, payment, the purchase itself',
      parts: ['owners', 'market', 'compare', 'finance', 'buy']
    },
    'by time': {
      name: 'by time',
      why: 'in the order things happen: needs, timing, research, the purchase, the set-up afterwards',
      parts: ['needs', 'timing', 'market', 'buy', 'after']
    },
    'by place': {
      name: 'by people involved',
      why: 'by who has a say or a stake: the household that needs it, owners who know it, the payer, the seller, the buyer of the old one',
      parts: ['needs', 'owners', 'finance', 'buy', 'old']
    },
    'by resource': {
      name: 'by resource',
      why:
        'by what the purchase consumes: the money (budget and payment), the needs it must meet, ' +
        'the comparison that spends the money well',
      parts: ['budget', 'finance', 'needs', 'compare', 'buy']
    }
  }
}
