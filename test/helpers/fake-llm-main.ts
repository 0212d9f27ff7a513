/**
 * Run the fake LLM server as its own process (for e2e runs and benchmarks):
 *
 *   node --import tsx test/helpers/fake-llm-main.ts [--port N] [--latency-ms N] [--children N] [--leaf-depth N] [--deps chain]
 *
 * Prints one JSON line `{"url": "...", "openaiUrl": "..."}` once it listens;
 * stops on SIGINT or SIGTERM. `GET <url>/_fake/requests` lists what it served.
 */
import { parseArgs } from 'node:util'
import { startFakeLlm } from './fake-llm.js'

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    'latency-ms': { type: 'string' },
    children: { type: 'string' },
    'leaf-depth': { type: 'string' },
    deps: { type: 'string' }
  }
})

const num = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v))

const fake = await startFakeLlm({
  port: num(values.port),
  latencyMs: num(values['latency-ms']),
  auto: {
    children: num(values.children),
    leafDepth: num(values['leaf-depth']),
    deps: values.deps === 'chain' ? 'chain' : 'none'
  }
})
process.stdout.write(`${JSON.stringify({ url: fake.url, openaiUrl: fake.openaiUrl })}\n`)

const stop = (): void => {
  void fake.close().then(() => process.exit(0))
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
