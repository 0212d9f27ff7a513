import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

/** The header the page sends the token in (`Authorization: Bearer <token>` works too). */
export const TOKEN_HEADER = 'x-plan-swarm-token'
/** Largest request body the dashboard reads. */
export const MAX_BODY_BYTES = 16 * 1024

/** A request the dashboard refuses: an HTTP status and a message that says what to do. */
export class DashboardRequestError extends Error {
  override readonly name = 'DashboardRequestError'
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message)
  }
}

/** A fresh token for `--allow-submit`: 24 random bytes, URL-safe. */
export function createSubmitToken(): string {
  return randomBytes(24).toString('base64url')
}

/**
 * May this request publish? Only when it comes from the page itself: an
 * Origin header, when present, must be this server's own origin (the Host
 * the browser reached), a browser's Sec-Fetch-Site must not say
 * cross-site, the body must be JSON (so a cross-site form cannot send it
 * without a CORS preflight, which we never grant), and the token the node
 * printed at start must be presented. Throws DashboardRequestError.
 */
export function checkWriteRequest(req: IncomingMessage, token: string): void {
  const host = req.headers.host
  const origin = req.headers.origin
  if (origin !== undefined && (host === undefined || (origin !== `http://${host}` && origin !== `https://${host}`))) {
    throw new DashboardRequestError(
      403,
      `cross-origin request refused: Origin ${origin} is not this dashboard (http://${host ?? '?'}); submit from the dashboard page itself`
    )
  }
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new DashboardRequestError(
      403,
      `cross-site request refused (Sec-Fetch-Site: ${String(site)}); submit from the dashboard page itself`
    )
  }
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase()
  if (type !== 'application/json')
    throw new DashboardRequestError(415, 'send the request body as JSON (content-type: application/json)')
  const auth = req.headers.authorization
  const header = req.headers[TOKEN_HEADER]
  const given =
    typeof header === 'string' && header !== ''
      ? header
      : typeof auth === 'string' && auth.startsWith('Bearer ')
        ? auth.slice(7).trim()
        : undefined
  if (typeof given !== 'string' || given === '')
    throw new DashboardRequestError(
      401,
      'missing token: paste the submit token the observer printed at start into the page'
    )
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new DashboardRequestError(
      401,
      'wrong token: use the submit token this observer printed at start (it changes at every start)'
    )
}

/** The request body as a JSON object, at most MAX_BODY_BYTES. */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) throw new DashboardRequestError(413, `request body over ${MAX_BODY_BYTES} bytes`)
    chunks.push(chunk)
  }
  let value: unknown
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch (err) {
    throw new DashboardRequestError(400, `the body is not JSON: ${(err as Error).message}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DashboardRequestError(400, 'the body must be a JSON object')
  return value as Record<string, unknown>
}
