#!/usr/bin/env node
// `npx plan-swarm ...` from a checkout: the same CLI as `npm start -- ...`,
// run from the TypeScript sources through tsx.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
