/** Reading the Prometheus text a node serves at /metrics, for the tests that count what it refused or sent. */

/** Sums of a counter's samples in Prometheus text, by one label. */
export function byLabel(text: string, metric: string, label: string): Record<string, number> {
  const out: Record<string, number> = {}
  const re = new RegExp(`^${metric}\\{([^}]*)\\}\\s+(\\S+)$`, 'gm')
  for (const m of text.matchAll(re)) {
    const l = new RegExp(`${label}="([^"]*)"`).exec(m[1] as string)?.[1] ?? ''
    out[l] = (out[l] ?? 0) + Number(m[2])
  }
  return out
}
