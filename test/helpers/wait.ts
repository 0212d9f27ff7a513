/**
 * The one way tests wait for something: poll a check until it gives a value.
 *
 *   const tree = await waitUntil('the plan to complete', () => done(plan) ? tree(plan) : undefined, 60_000)
 *
 * The check may be async. `undefined` and `false` mean "not yet"; anything
 * else ends the wait and is returned. A check that throws is not yet done
 * either: its error is kept and tried again at the next poll. Past the
 * deadline the wait fails with what it waited for and the last thing the
 * check returned or threw, so a timeout says how far things got.
 */

/** How long a failure message may quote the last value seen. */
const SHOWN_CHARS = 300

function show(last: { value: unknown } | { error: unknown } | undefined): string {
  if (last === undefined) return 'the check never ran'
  if ('error' in last) return `last error: ${last.error instanceof Error ? last.error.message : String(last.error)}`
  let text: string
  try {
    text = JSON.stringify(last.value) ?? String(last.value)
  } catch {
    text = String(last.value)
  }
  return `last seen: ${text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}...` : text}`
}

/**
 * Polls `check` every `everyMs` until it returns something other than
 * `undefined` or `false`, and returns that; throws after `timeoutMs`.
 */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 100
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: { value: unknown } | { error: unknown } | undefined
  for (;;) {
    try {
      const v = await check()
      if (v !== undefined && v !== false) return v
      last = { value: v }
    } catch (error) {
      last = { error }
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${show(last)}`)
    await new Promise(resolve => setTimeout(resolve, everyMs))
  }
}
