import { z } from 'zod'
import type { WebhookEvent } from '../upstream/schemas.ts'
import { unknownKey } from '../utils/did-you-mean.ts'
import { targetEventProblem, type WebhookTargets } from './target-event.ts'
import { printable } from '../utils/printable.ts'

/**
 * `DESTINATIONS`: where verified events are forwarded. Declared in switchboard.config.ts (typed, and the
 * only place a `filter` function can live) or as a JSON array in the environment.
 */

/** What a destination's `filter` sees: one event about to be forwarded. */
export interface ForwardedEvent {
  /** The event id (provider `event_id`, or the id of an event a recipe published). */
  id: string
  type: string
  agentId: number | null
  conversationId: string | null
  /**
   * 'provider' for the provider's verified webhook events (and reconciliation's), 'recipe' for events a recipe
   * published, 'target' for events received on a named target of another scheme (`/webhooks/<target>`, a CRM's own).
   */
  source: 'provider' | 'recipe' | 'target'
  /** For source 'target': the target's name. */
  target?: string
  /**
   * The body that will be sent: `{ event_id, event_type, timestamp, data }` for provider and recipe events; a named
   * target's event goes as its sender sent it.
   */
  body: ForwardedBody
}

export interface ForwardedBody {
  event_id: string
  event_type: string
  timestamp: string
  data: WebhookEvent['data'] | Record<string, unknown>
  [key: string]: unknown
}

/**
 * A destination's `filter`: a synchronous function of the event that returns true (forward it) or false (skip it).
 * - What it returns is read as JavaScript reads a condition, as `Array.prototype.filter` does: `undefined`, `null`, `0`,
 *   `''` and `NaN` skip the event, any other value forwards it. A value that is not a boolean is a mistake all the same
 *   (a block body with no `return` skips every event): it is logged, once per destination, with what came back.
 * - An `async` (or generator) function is refused at config load: forwarding cannot wait for its Promise. A Promise
 *   returned at run time all the same (`(e) => lookup(e).then(…)`) is logged as a configuration error, once per
 *   destination, and the event is forwarded — a Promise is truthy, and forwarding it loses nothing.
 * - A filter that throws skips the event, logged each time.
 */
export type DestinationFilter = (event: ForwardedEvent) => boolean

/** Functions whose call returns a Promise or an iterator (always truthy), never a verdict: why, by constructor name. */
const NOT_A_VERDICT: Readonly<Record<string, string>> = {
  AsyncFunction: 'an async function returns a Promise, which forwarding cannot wait for',
  AsyncGeneratorFunction: 'an async generator function returns an iterator',
  GeneratorFunction: 'a generator function returns an iterator',
}

/** Why `filter` can give no verdict (see DestinationFilter), or undefined when it is a plain function. */
function filterProblem(filter: unknown): string | undefined {
  if (typeof filter !== 'function') return undefined
  const kind = String(filter.constructor?.name)
  if (!Object.hasOwn(NOT_A_VERDICT, kind)) return undefined
  return `must be a plain function that returns true or false: ${NOT_A_VERDICT[kind]} (decide from the event alone; a recipe can look things up and publish an event instead)`
}

/**
 * About 10 attempts over ~23 h: quick retries for blips, then hours for outages. Each wait is jittered
 * ±20 % so a recovering sink is not hit by every queued delivery at the same instant.
 */
export const DEFAULT_RETRY_SCHEDULE_MS = [
  10_000, 60_000, 5 * 60_000, 15 * 60_000, 30 * 60_000, 60 * 60_000, 3 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000,
]

const WHSEC = /^whsec_([A-Za-z0-9+/]+={0,2})$/

const secret = z.string().refine(
  (s) => {
    const m = WHSEC.exec(s)
    return Boolean(m && Buffer.from(m[1]!, 'base64').length >= 16)
  },
  { error: 'must be whsec_ followed by base64 of at least 16 bytes (e.g. whsec_$(openssl rand -base64 32))' },
)

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/**
 * Headers a destination may not set, each with the reason its refusal gives: switchboard's own, and those of the
 * connection, which its HTTP client sets (undici refuses connection, keep-alive, upgrade, transfer-encoding and expect
 * at send time, so every attempt failed; te, trailer and proxy-connection are hop-by-hop too).
 */
const CONNECTION_HEADER = "switchboard's HTTP client sets the connection's headers itself (host, content-length and the hop-by-hop ones)"
const RESERVED_HEADERS: ReadonlyMap<string, string> = new Map([
  ...['x-switchboard-event-type', 'content-type'].map((name) => [name, 'switchboard sets it on every delivery'] as const),
  ...['host', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect'].map(
    (name) => [name, CONNECTION_HEADER] as const,
  ),
])
/** Standard Webhooks' namespace (webhook-id, webhook-timestamp, webhook-signature and any it adds): switchboard's alone. */
const RESERVED_PREFIX = 'webhook-'

/** Why a destination may not set header `name`, or undefined when it may. */
function reservedReason(name: string): string | undefined {
  const key = name.toLowerCase()
  if (key.startsWith(RESERVED_PREFIX)) return `switchboard sets the ${RESERVED_PREFIX}* signature headers itself`
  return RESERVED_HEADERS.get(key)
}

/**
 * One `events` entry: `*`, a type (`call.completed`), a prefix (`call.*`), each alone or after `<target>:`. Anything
 * else can match no event — `*.completed`, `call*`, a type with a space pasted from an environment variable — and was
 * taken all the same: the destination forwarded nothing, and said nothing.
 */
const eventPattern = z.string().min(1).superRefine((pattern, ctx) => {
  const type = pattern.slice(pattern.indexOf(':') + 1)
  if (/\s/.test(pattern)) ctx.addIssue({ code: 'custom', message: `"${printable(pattern, 80)}" has a space in it, which no event type has` })
  else if (type.includes('*') && type !== '*' && !/^[^*]+\.\*$/.test(type)) {
    ctx.addIssue({ code: 'custom', message: `"${printable(pattern, 80)}" can match no event: "*" stands alone ("*", "crm:*") or ends a prefix ("call.*")` })
  }
})

export const destinationSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/i, { error: 'must be letters, digits, - or _ (at most 63)' }),
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    /** One secret, or several during rotation (the first signs; all are sent as signatures). */
    secret: z.custom<string | string[]>(() => true).transform((value, ctx): string[] => {
      // Checked here rather than as a union: a union's error is "Invalid input", where a secret read from an unset
      // environment variable (process.env.CRM_HOOK_SECRET_OLD) deserves its own line.
      const list = Array.isArray(value) ? value : [value]
      if (list.length === 0) ctx.addIssue({ code: 'custom', message: 'needs at least one secret' })
      for (const [i, item] of list.entries()) {
        const path = Array.isArray(value) ? [i] : []
        if (item === undefined || item === null || item === '') {
          ctx.addIssue({ code: 'custom', path, message: 'is missing (is the environment variable it comes from set?)' })
        } else if (!secret.safeParse(item).success) {
          ctx.addIssue({ code: 'custom', path, message: 'must be whsec_ followed by base64 of at least 16 bytes (e.g. whsec_$(openssl rand -base64 32))' })
        }
      }
      return list as string[]
    }),
    /** Event types to forward (provider types, types recipes publish, `<target>:<type>` of a named target); all when omitted. */
    events: z.array(eventPattern).min(1, { error: 'list at least one event type, or leave it out for all' }).optional(),
    agentIds: z.array(z.number().int()).min(1).optional(),
    filter: z
      .custom<DestinationFilter>((v) => typeof v === 'function', { error: 'must be a function (config file only)' })
      .superRefine((f, ctx) => {
        const problem = filterProblem(f)
        if (problem) ctx.addIssue({ code: 'custom', message: problem })
      })
      .optional(),
    timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
    retryScheduleMs: z.array(z.number().int().min(0).max(7 * 86_400_000)).max(50).default(DEFAULT_RETRY_SCHEDULE_MS),
    /** Events of one conversation are delivered one at a time, in the order they were received. */
    ordered: z.boolean().default(false),
    /** Requests in flight at once to this destination (per replica). */
    concurrency: z.number().int().min(1).max(256).default(16),
    headers: z
      .record(
        z.string().regex(HEADER_NAME, { error: 'header names must be tokens' }),
        // What an HTTP client sends as it is: no line breaks (a second header smuggled in), no characters past ASCII (an
        // en dash pasted from a document), which every attempt would then fail on.
        z.string().regex(/^[\t\x20-\x7e]*$/, { error: 'header values may hold printable ASCII, spaces and tabs only (no line breaks, no characters such as “–”)' }),
      )
      .superRefine((h, ctx) => {
        const reserved = Object.keys(h).find((name) => reservedReason(name) !== undefined)
        if (reserved !== undefined) ctx.addIssue({ code: 'custom', message: `may not set "${printable(reserved, 80)}": ${reservedReason(reserved)}` })
      })
      // Header names are case-insensitive: kept lowercase, so `User-Agent` replaces switchboard's own instead of going
      // out beside it, and two spellings of one name are a mistake rather than two headers.
      .transform((h, ctx) => {
        const out: Record<string, string> = {}
        for (const [name, value] of Object.entries(h)) {
          const key = name.toLowerCase()
          if (key in out) ctx.addIssue({ code: 'custom', path: [name], message: 'names a header already set (header names are case-insensitive)' })
          out[key] = value
        }
        return out
      })
      .default({}),
    /** Plain http is refused unless this is true (a same-host or private-network app without TLS). */
    allowHttp: z.boolean().default(false),
    /** Redirects are failed attempts unless this is set; each hop is checked like the first address. */
    followRedirects: z.number().int().min(0).max(5).default(0),
  })
  .strict()
  .superRefine((d, ctx) => {
    // Runs even when `url` failed its own check (a format issue does not stop the object's refinements): a URL that
    // does not parse has its line already, and must not throw here.
    if (!URL.canParse(d.url)) return
    // As the URL reads it: `HTTP://` is http too.
    if (new URL(d.url).protocol === 'http:' && !d.allowHttp) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'must be https (set allowHttp: true to allow plain http)' })
    }
  })

export type DestinationInput = z.input<typeof destinationSchema>
export type DestinationConfig = z.output<typeof destinationSchema>

/** Declares one destination with its types (`DESTINATIONS: [defineDestination({ … })]`). */
export function defineDestination(destination: DestinationInput): DestinationInput {
  return destination
}

function describe(issue: z.core.$ZodIssue): string {
  // A misspelled key (`retrySchedule`), with the key it most likely meant.
  if (issue.code === 'unrecognized_keys' && issue.path.length === 0) return `has an ${unknownKey(issue.keys[0]!, Object.keys(destinationSchema.shape))}`
  // `secret[1]`, `headers.x-team`: an index as a list's, a key after a dot.
  const field = issue.path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i ? '.' : ''}${printable(String(key), 80)}`)).join('')
  return field ? `${field} ${issue.message}` : issue.message
}

/**
 * The `DESTINATIONS` key: a JSON array (environment) or an array (config file). Errors name the
 * destination and the field, e.g. `destination "crm": url must be https …`.
 */
export const destinationsSchema = z.union([z.string(), z.array(z.custom<DestinationInput>())], { error: 'must be a list of destinations ([{ name, url, secret, … }])' }).transform((value, ctx): DestinationConfig[] => {
  let list: unknown = value
  if (typeof value === 'string') {
    if (!value.trim()) return []
    try {
      list = JSON.parse(value)
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of destinations' })
      return z.NEVER
    }
  }
  if (!Array.isArray(list)) {
    ctx.addIssue({ code: 'custom', message: 'must be an array of destinations' })
    return z.NEVER
  }
  const out: DestinationConfig[] = []
  const seen = new Set<string>()
  for (const [i, item] of list.entries()) {
    const rawName = typeof item === 'object' && item !== null ? (item as { name?: unknown }).name : undefined
    // Quoted escaped: a name with a line break or an escape sequence in it must not break the error's one line.
    const label = typeof rawName === 'string' && rawName ? `destination "${printable(rawName, 80)}"` : `destination #${i + 1}`
    const parsed = destinationSchema.safeParse(item)
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: `${label}: ${describe(parsed.error.issues[0]!)}` })
      return z.NEVER
    }
    if (seen.has(parsed.data.name)) {
      ctx.addIssue({ code: 'custom', message: `${label}: name is used twice` })
      return z.NEVER
    }
    seen.add(parsed.data.name)
    out.push(parsed.data)
  }
  return out
})

/**
 * Why one `<target>:<type>` entry of `events` can match nothing, or undefined when it can (a bare type always may: it
 * takes the type from the provider, recipes and every target) — read as a recipe's `on` is (src/config/target-event.ts).
 * An unknown target used to be accepted, and its destination never got those events.
 */
function eventPatternProblem(pattern: string, targets: WebhookTargets): string | undefined {
  if (pattern.indexOf(':') <= 0) return undefined
  const problem = targetEventProblem(pattern, targets)
  if (!problem) return undefined
  const listed = `events lists "${printable(pattern, 80)}"`
  const type = printable(problem.type, 80)
  if (problem.kind === 'provider') return `${listed}, but target "${printable(problem.target, 63)}" carries the provider's events: list them by type alone, e.g. "${type}"`
  const guess = problem.near ? `: did you mean "${problem.near}:${type}"?` : ''
  return `${listed}, but no webhook target is named "${printable(problem.target, 63)}"${guess} (${problem.configured}; the provider's own events take no prefix)`
}

/**
 * The first destination whose `events` name a webhook target that sends none (checked at config load, where
 * WEBHOOK_TARGETS is known): one line naming the destination, the pattern and the targets there are.
 */
export function destinationEventsProblem(destinations: readonly DestinationConfig[], targets: WebhookTargets): string | undefined {
  for (const destination of destinations) {
    for (const pattern of destination.events ?? []) {
      const problem = eventPatternProblem(pattern, targets)
      if (problem) return `destination "${destination.name}": ${problem}`
    }
  }
  return undefined
}
