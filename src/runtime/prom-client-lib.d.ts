/**
 * Types for the files of prom-client that src/runtime/metrics.ts imports one
 * by one: each is the class or function of the same name in prom-client's
 * index, which has no types of its own for them.
 */
declare module 'prom-client/lib/registry.js' {
  import type { Registry as T } from 'prom-client'
  const Registry: typeof T
  export default Registry
}
declare module 'prom-client/lib/counter.js' {
  import type { Counter as T } from 'prom-client'
  const Counter: typeof T
  export default Counter
}
declare module 'prom-client/lib/gauge.js' {
  import type { Gauge as T } from 'prom-client'
  const Gauge: typeof T
  export default Gauge
}
declare module 'prom-client/lib/histogram.js' {
  import type { Histogram as T } from 'prom-client'
  const Histogram: typeof T
  export default Histogram
}
declare module 'prom-client/lib/defaultMetrics.js' {
  import type { collectDefaultMetrics as T } from 'prom-client'
  const collectDefaultMetrics: typeof T
  export default collectDefaultMetrics
}
