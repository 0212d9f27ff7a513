/**
 * The e2e benchmark's chart, drawn from its own results: makespan (swarm and
 * the ideal central scheduler) and the leaderless tax against swarm size, at
 * the headline LLM latency.
 */
export function e2eSvg(cells: ReadonlyArray<Record<string, unknown>>, latencyMs: number): string {
  const pts = cells
    .filter(c => c.latencyMs === latencyMs && typeof c.makespanMs === 'number')
    .map(c => ({
      size: c.size as number,
      swarm: c.makespanMs as number,
      central: c.centralMs as number,
      tax: c.tax as number
    }))
    .sort((a, b) => a.size - b.size)
  const W = 720
  const H = 300
  const pad = { l: 60, r: 20, t: 40, b: 50 }
  const pw = (W - pad.l - pad.r - 40) / 2
  const ph = H - pad.t - pad.b
  const sizes = pts.map(p => p.size)
  const xOf = (i: number, x0: number): number => x0 + (pts.length <= 1 ? pw / 2 : (i * pw) / (pts.length - 1))
  const maxMs = Math.max(1, ...pts.flatMap(p => [p.swarm, p.central])) * 1.15
  const maxTax = Math.max(1.3, ...pts.map(p => p.tax)) * 1.1
  const line = (vals: number[], x0: number, max: number, color: string): string =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" ` +
    `points="${vals.map((v, i) => `${xOf(i, x0).toFixed(1)},${(pad.t + ph - (v / max) * ph).toFixed(1)}`).join(' ')}"/>` +
    vals
      .map(
        (v, i) =>
          `<circle cx="${xOf(i, x0).toFixed(1)}" cy="${(pad.t + ph - (v / max) * ph).toFixed(1)}" r="3.5" fill="${color}"/>` +
          (`<text x="${xOf(i, x0).toFixed(1)}" y="${(pad.t + ph - (v / max) * ph - 8).toFixed(1)}" ` +
            `font-size="11" text-anchor="middle" ` +
            `fill="${color}">${max === maxTax ? v.toFixed(2) : Math.round(v)}</text>`)
      )
      .join('')
  const axes = (x0: number, title: string, yLabel: string): string =>
    `<rect x="${x0}" y="${pad.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>` +
    `<text x="${x0 + pw / 2}" y="${pad.t - 14}" font-size="13" text-anchor="middle">${title}</text>` +
    (`<text x="${x0 - 44}" y="${pad.t + ph / 2}" font-size="11" text-anchor="middle" ` +
      `transform="rotate(-90 ${x0 - 44} ${pad.t + ph / 2})">${yLabel}</text>`) +
    sizes
      .map(
        (s, i) =>
          `<text x="${xOf(i, x0).toFixed(1)}" y="${pad.t + ph + 16}" font-size="11" text-anchor="middle">${s}</text>`
      )
      .join('') +
    `<text x="${x0 + pw / 2}" y="${pad.t + ph + 34}" font-size="11" text-anchor="middle">processes</text>`
  const x1 = pad.l
  const x2 = pad.l + pw + 60
  const target = pad.t + ph - (1.15 / maxTax) * ph
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${axes(x1, `makespan (ms), LLM ${latencyMs} ms a call`, 'ms')}
${line(
  pts.map(p => p.central),
  x1,
  maxMs,
  '#888'
)}
${line(
  pts.map(p => p.swarm),
  x1,
  maxMs,
  '#1f6fb4'
)}
<text x="${x1 + 8}" y="${pad.t + 14}" font-size="11" fill="#1f6fb4">swarm</text>
<text x="${x1 + 8}" y="${pad.t + 28}" font-size="11" fill="#888">ideal central scheduler</text>
${axes(x2, 'leaderless tax (swarm / central)', 'ratio')}
<line x1="${x2}" x2="${x2 + pw}" y1="${target.toFixed(1)}" y2="${target.toFixed(1)}" stroke="#c33" stroke-dasharray="4 3"/>
<text x="${x2 + pw - 4}" y="${(target - 4).toFixed(1)}" font-size="10" text-anchor="end" fill="#c33">target 1.15</text>
${line(
  pts.map(p => p.tax),
  x2,
  maxTax,
  '#1f6fb4'
)}
</svg>
`
}
