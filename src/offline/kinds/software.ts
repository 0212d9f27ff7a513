/** The offline plan shape for software or a technical project: an app, a library, a website, a migration. */
import { part, type KindTable } from '../parts.js'

export const SOFTWARE: KindTable = {
  kind: 'software',
  label: 'software or a technical project',
  thing: 'the software',
  alt: 'the code',
  parts: [
    part(
      'reqs',
      'Define the requirements',
      'a short spec lists the users, the must-have features and what is out of scope',
      [
        ['List the users and their needs', 'each kind of user has one line on what they need'],
        ['Pick the must-have features', 'at most five features are marked must-have', [0]],
        ['Write down what is out of scope', 'a short list says what the first version will not do', [1]]
      ],
      ['users']
    ),
    part(
      'design',
      'Design the architecture',
      'a one-page design names the main components, the data they keep and the interfaces between them',
      [
        ['Choose the language and stack', 'the choice and the reason are written down'],
        ['Sketch the main components', 'a diagram shows the components and how data flows', [0]],
        ['Define the public interface', 'the API or the user-facing surface is written down', [1]]
      ],
      ['reqs']
    ),
    part(
      'setup',
      'Set up the repository and CI',
      'a repository with a licence, a README, a build and a CI run on every change exists',
      [
        ['Create the repository', 'the repository exists with a licence and a README'],
        ['Add the build and test tooling', 'one command builds and one runs the tests', [0]],
        ['Set up continuous integration', 'every push runs the build and the tests', [1]]
      ],
      ['design']
    ),
    part(
      'build',
      'Build the core features',
      'the must-have features work end to end, each with tests',
      [
        ['Implement the first feature end to end', 'one feature works from input to output'],
        ['Implement the remaining must-haves', 'every must-have feature works', [0]],
        ['Write tests for each feature', 'each feature has tests that pass in CI', [0]]
      ],
      ['design', 'setup', 'reqs', 'milestones', 'mvp', 'effort']
    ),
    part(
      'test',
      'Test the release candidate',
      'the tests pass in CI, and the known bugs are fixed or listed',
      [
        ['Run the full test suite', 'the whole suite passes on a clean checkout'],
        ['Test by hand on a clean machine', 'install and the main flows work from scratch'],
        ['Fix the blocking bugs', 'no bug marked blocking is open', [0, 1]]
      ],
      ['build', 'mvp']
    ),
    part(
      'docs',
      'Write the documentation',
      'a README explains install, a first example and the API, and the changelog lists the release',
      [
        ['Write the install instructions', 'a newcomer can install it by following them'],
        ['Write a quick-start example', 'the example runs as written'],
        ['Document the public API', 'every public function or endpoint is described']
      ],
      ['build']
    ),
    part(
      'release',
      'Release the first version',
      'version 0.1 is tagged and published where users get it, with release notes',
      [
        ['Tag the release', 'a version tag and release notes exist'],
        ['Publish or deploy the build', 'users can install or reach the new version', [0]],
        ['Announce the release', 'the announcement is out where the users are', [1]]
      ],
      ['test', 'docs', 'security', 'ops']
    ),
    part(
      'feedback',
      'Collect feedback from users',
      'issues and feedback from the first users are sorted into the next milestone',
      [
        ['Invite a few early users', 'three or more people are using it'],
        ['Triage the issues', 'every issue is labelled and either planned or closed', [0]],
        ['Plan the next milestone', 'the next milestone has its issues and a date', [1]]
      ],
      ['release']
    ),
    part(
      'users',
      'Talk to the future users',
      'at least three potential users have described the problem and what they would use',
      [
        ['Find three potential users', 'three people with the problem agreed to talk'],
        ['Interview each user', 'notes from each conversation are saved', [0]],
        ['Summarise what they need', 'one page lists the needs they share', [1]]
      ]
    ),
    part(
      'security',
      'Review security and licences',
      'dependencies, secrets and licences are checked and nothing blocks a release',
      [
        ['Audit the dependencies', 'known vulnerabilities are fixed or accepted in writing'],
        ['Check for secrets in the code', 'no key or password is in the repository'],
        ['Choose the licence', 'a licence file is in the repository and fits the dependencies']
      ],
      ['build']
    ),
    part(
      'ops',
      'Plan hosting and operations',
      'where it runs, how it is deployed and how failures are noticed are written down',
      [
        ['Choose where it runs', 'the hosting or the package registry is chosen, with its cost'],
        ['Automate the deployment', 'one command or one merge deploys a new version', [0]],
        ['Set up monitoring and alerts', 'a failure reaches someone within minutes', [1]]
      ],
      ['design', 'build']
    ),
    part(
      'effort',
      'Estimate time and cost',
      'the effort in person-weeks and the running costs are estimated and compared with what is available',
      [
        ['Estimate each feature', 'each must-have has an estimate in days'],
        ['Price hosting and tools', 'monthly running costs are listed'],
        [
          'Compare the total with the time available',
          'the scope fits the people and the weeks available, or is cut',
          [0, 1]
        ]
      ],
      ['reqs']
    ),
    part(
      'milestones',
      'Plan the milestones',
      'the work is split into short milestones, each ending in a demo',
      [
        ['List the milestones', 'three to five milestones are written down'],
        ['Estimate each milestone', 'each milestone has a size in days', [0]],
        ['Set the demo dates', 'each milestone ends with a demo date', [1]]
      ],
      ['reqs']
    ),
    part(
      'mvp',
      'Build a minimal first version',
      'the smallest useful version runs for one real use case',
      [
        ['Pick the one use case', 'one use case is chosen and written down'],
        ['Build the thinnest working path', 'the use case works end to end, however plainly', [0]],
        ['Demo it to a user', 'one user has tried it and their comments are noted', [1]]
      ],
      ['milestones', 'reqs']
    )
  ],
  views: {
    'by phase': {
      name: 'by phase',
      why: 'requirements, design, build, test, release; each phase needs the one before',
      parts: ['reqs', 'design', 'build', 'test', 'release']
    },
    'by activity': {
      name: 'by workstream',
      why: 'one subgoal per stream of work someone can own: repository and CI, features, testing, documentation, release',
      parts: ['setup', 'build', 'test', 'docs', 'release']
    },
    'by time': {
      name: 'by milestone',
      why: 'in the order of delivery: milestones, a minimal version, testing, the first release, feedback for the next round',
      parts: ['milestones', 'mvp', 'test', 'release', 'feedback']
    },
    'by place': {
      name: 'by stakeholder',
      why: 'by who it is for and who must accept it: the users, their requirements, the build they get, the release and their feedback',
      parts: ['users', 'reqs', 'build', 'release', 'feedback']
    },
    'by resource': {
      name: 'by resource',
      why: 'by what the work consumes: time and money, the tooling, the infrastructure, the licences, then the build itself',
      parts: ['effort', 'setup', 'build', 'ops', 'release']
    }
  }
}
