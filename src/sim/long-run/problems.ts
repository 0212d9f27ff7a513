import { DAY_MS } from '../../core/retention.js'

/** Virtual ms (elapsed) as the day a problem or a trace line names, to two places. */
export const dayText = (elapsedMs: number): string => (elapsedMs / DAY_MS).toFixed(2)

/**
 * The problems a long run finds, kept (the first 200) for its report and
 * traced as found (the first 20): a run of hours shows its first failure
 * when it happens, not at its end.
 */
export class Problems {
  readonly list: string[] = []

  constructor(private readonly trace: ((line: string) => void) | undefined) {}

  add(p: string): void {
    if (this.list.length < 200) this.list.push(p)
    if (this.list.length <= 20) this.trace?.(`problem: ${p}`)
  }
}
