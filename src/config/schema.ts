import { misreadZone } from '../campaigns/zone-abbreviations.ts'
import { isSupportedCountry } from 'libphonenumber-js/max'
import { domainToASCII } from 'node:url'
import { z } from 'zod'
import { destinationsSchema } from './destinations.ts'
import { formatMailbox, readAddressList, type AddressRefusal } from '../utils/mail-addresses.ts'
import { secretProblem } from './webhook-secret.ts'
import { postgresDriverReads } from '../db/postgres-url.ts'

/**
 * Every setting switchboard reads, keyed by its environment variable. `switchboard.config.ts` may set the
 * same keys; the environment wins. The README's Configuration table is written from this file.
 */

const bool = z
  .union([z.boolean(), z.string().trim().toLowerCase().pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no', '']))], { error: 'must be true or false' })
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes')

/** An HTTP header name (an RFC 9110 token): `Headers.get` throws on anything else, so a target could never verify. */
const headerName = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required: the name of an HTTP header' : 'must be an HTTP header name (a string)') })
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: 'must be an HTTP header name (letters, digits and -, no spaces)' })
  .transform((h) => h.toLowerCase())

/**
 * An http(s) base URL the client can use: fetch refuses one with credentials, and a query or fragment would swallow the
 * paths appended to it. Refused at start-up, with the URL never echoed (it may hold a secret).
 */
const baseUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).refine(
  (u) => {
    // zod runs this check after a failed z.url() too: `api.example.com` (no scheme) threw here, and start-up said only
    // "Invalid URL" (exit 1) instead of the line above.
    let url: URL
    try {
      url = new URL(u)
    } catch {
      return true
    }
    return !url.username && !url.password && !url.search && !url.hash
  },
  { error: 'must be a plain http(s) base URL, without credentials, a query or a fragment' },
)

/**
 * A whole number: a number (config file), or digits with spaces around them allowed (environment, or the file).
 * Not `z.coerce.number`: it reads ' ', '' and null as 0 (PORT 0 is a random port, a tolerance of 0 turns
 * the timestamp check off), true as 1, and [4096] as 4096. A sign is read so that '-1' is "at least 0".
 */
const int = (min: number, max: number) =>
  z
    .union([z.number(), z.string()], { error: 'must be a number' })
    .transform((value, ctx) => {
      if (typeof value === 'number' || /^\s*-?\d+\s*$/.test(value)) return Number(value)
      const n = value.trim() === '' ? NaN : Number(value)
      // '1.5' is a number but not whole; '1e3' and '0x50' are whole but not written the way this is read.
      const message = !Number.isFinite(n) ? 'must be a number' : Number.isInteger(n) ? 'must be a whole number in digits' : 'must be a whole number'
      ctx.addIssue({ code: 'custom', message })
      return z.NEVER
    })
    .pipe(
      z
        .number({ error: 'must be a number' })
        .int({ error: 'must be a whole number' })
        .min(min, { error: `must be at least ${min}` })
        .max(max, { error: `must be at most ${max}` }),
    )

const list = z
  .union([z.string(), z.array(z.string())], { error: 'must be text (a comma-separated string) or a list of strings' })
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean))

/**
 * Webhook secrets of a scheme (WEBHOOK_SECRET's is `formant`), refused at start-up when one is a placeholder or not a key
 * the scheme can verify with (src/config/webhook-secret.ts): the first such secret, without echoing it.
 */
const secretsOf = (scheme: 'formant' | 'standard' | 'hmac') =>
  list.superRefine((secrets, ctx) => {
    for (const secret of secrets) {
      const problem = secretProblem(secret, scheme)
      if (!problem) continue
      ctx.addIssue({ code: 'custom', message: problem })
      return
    }
  })
export const secretList = secretsOf('formant')

const email = z.email()

/**
 * One recipient as REPORT_TO and `report send --to` take it: `ops@example.com` or `Ops <ops@example.com>`. An
 * internationalised address (`ops@bücher.example`, `jörg@example.com`) is checked in the form it travels in — the
 * domain in its ASCII form, as nodemailer sends it — as `ctx.mail.send` takes it: REPORT_TO refused what a recipe's mail
 * was sent to.
 */
export function isMailAddress(text: string): boolean {
  const address = text.replace(/^.*<([^>]+)>\s*$/, '$1')
  const at = address.lastIndexOf('@')
  if (at <= 0) return false
  const domain = domainToASCII(address.slice(at + 1))
  // A local part's non-ASCII letters are the relay's to take (SMTPUTF8); its shape is checked as an ASCII one's.
  const local = address.slice(0, at).replace(/[^\x00-\x7f]/gu, 'a')
  return domain !== '' && email.safeParse(`${local}@${domain}`).success
}

/**
 * Email addresses, comma-separated (or an array of them). Read strictly (`readAddressList`): a comma inside a quoted
 * display name (`"Doe, John" <j@example.com>`) is part of the name, not a second address, and anything else — two
 * addresses without a comma, a line break, `Bcc: …` — is refused naming the entry, where it once dropped or replaced
 * a recipient without a word.
 */
const emailList = z
  .union([z.string(), z.array(z.string())], { error: 'must be email addresses: a comma-separated string, or a list of strings' })
  .transform((v, ctx) => {
    const list = readAddressList(v)
    const rule = 'must be email addresses, comma-separated'
    if (!list.ok) {
      ctx.addIssue({ code: 'custom', message: list.refusal.hint ? `${rule}: ${list.refusal.hint}` : rule, params: { entry: list.refusal.entry } })
      return z.NEVER
    }
    const addresses = list.mailboxes.map(formatMailbox)
    const bad = addresses.find((a) => !isMailAddress(a))
    if (bad !== undefined) {
      ctx.addIssue({ code: 'custom', message: rule, params: { entry: bad } })
      return z.NEVER
    }
    return addresses
  })

const timeZone = z.string().refine(
  (tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz })
      return true
    } catch {
      return false
    }
  },
  { error: 'must be an IANA time zone such as Asia/Kolkata' },
).superRefine((tz, ctx) => {
  // Intl takes EST (UTC−5 all year, no daylight saving): a recipe's 08:00 would run at 09:00 New York time all summer.
  const misread = misreadZone(tz)
  if (misread) ctx.addIssue({ code: 'custom', message: misread })
})

/** How one named webhook target verifies what it receives. */
/** Strict: a misspelled key (`secret` for `secrets`) is refused instead of silently ignored. */
export const webhookTargetSchema = z.discriminatedUnion('scheme', [
  z.strictObject({
    scheme: z.literal('formant'),
    secrets: secretList.default([]),
  }),
  z.strictObject({
    /** Standard Webhooks: webhook-id / webhook-timestamp / webhook-signature, whsec_ secrets. */
    scheme: z.literal('standard'),
    // The key is the base64 after `whsec_`, prefix or not: a secret that does not decode would verify nothing.
    secrets: secretsOf('standard').default([]),
  }),
  z.strictObject({
    /** A generic HMAC over the raw body; header, prefix, encoding and algorithm are configurable. */
    scheme: z.literal('hmac'),
    secrets: secretsOf('hmac').default([]),
    // Required: which header carries the signature (GitHub: X-Hub-Signature-256, with prefix "sha256=").
    header: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required for scheme "hmac": the header that carries the signature, e.g. X-Hub-Signature-256' : 'must be an HTTP header name (a string)') })
      .pipe(headerName),
    // A comma or a space separates several signatures in the header, so a prefix holding one could never match.
    prefix: z
      .string()
      .regex(/^[^\s,]*$/, { error: 'must not contain a comma or a space: they separate signatures in the header (for "v1,<base64>" signatures use scheme "standard")' })
      .default(''),
    encoding: z.enum(['hex', 'base64']).default('hex'),
    algorithm: z.enum(['sha256', 'sha1', 'sha512']).default('sha256'),
    timestampHeader: headerName.optional(),
    /** Where the sender puts the delivery's id and type when its body has no `event_id`/`event_type` (GitHub: X-GitHub-Delivery, X-GitHub-Event). */
    idHeader: headerName.optional(),
    typeHeader: headerName.optional(),
  }),
])
export type WebhookTargetConfig = z.infer<typeof webhookTargetSchema>

/** An object given as JSON text (environment) or as an object (config file). */
const jsonObject = z.unknown().transform((value, ctx) => {
  if (typeof value !== 'string') return value
  if (!value.trim()) return {}
  try {
    return JSON.parse(value) as unknown
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object' })
    return z.NEVER
  }
})

/** `webhook_duplicate=0.1,webhook_drop=0.05,...`: probability per fault, latency in ms. */
export const sandboxFaultsSchema = z
  .union([z.string(), z.record(z.string(), z.number())], { error: 'must be fault=value pairs (a string such as "webhook_drop=0.05") or an object of numbers' })
  .transform((input, ctx) => {
    const entries: [string, number][] = []
    if (typeof input !== 'string') entries.push(...Object.entries(input))
    else {
      for (const pair of input.split(',').map((p) => p.trim()).filter(Boolean)) {
        // `webhook_drop` or `webhook_drop=` is a value left out, not 0 (Number('') is 0): refused, not a fault turned off.
        const match = /^([^=]+)=([^=]+)$/.exec(pair)
        const value = match?.[2]!.trim()
        if (!match || !value) {
          ctx.addIssue({ code: 'custom', message: `entry "${pair}" must be fault=value, e.g. webhook_drop=0.05` })
          return z.NEVER
        }
        const name = match[1]!.trim()
        // The last one silently won: a list edited in two places says which value it meant.
        if (entries.some(([seen]) => seen === name)) {
          ctx.addIssue({ code: 'custom', message: `${name} is given twice: keep one entry` })
          return z.NEVER
        }
        // Decimal as written: Number() also read `0x10`, `1e3` and `Infinity`, values nobody writes on purpose here.
        entries.push([name, /^\d+(\.\d+)?$|^\.\d+$/.test(value) ? Number(value) : NaN])
      }
    }
    const known = ['webhook_duplicate', 'webhook_drop', 'webhook_reorder', 'upstream_500', 'upstream_500_after', 'latency_ms']
    const out: Record<string, number> = {}
    for (const [k, v] of entries) {
      if (!known.includes(k)) {
        ctx.addIssue({ code: 'custom', message: `unknown fault "${k}" (known: ${known.join(', ')})` })
        return z.NEVER
      }
      const max = k === 'latency_ms' ? 60_000 : 1
      if (!Number.isFinite(v) || v < 0 || v > max) {
        ctx.addIssue({ code: 'custom', message: `${k} must be a number from 0 to ${max}` })
        return z.NEVER
      }
      out[k] = v
    }
    return {
      webhookDuplicate: out.webhook_duplicate ?? 0,
      webhookDrop: out.webhook_drop ?? 0,
      webhookReorder: out.webhook_reorder ?? 0,
      upstream500: out.upstream_500 ?? 0,
      upstream500After: out.upstream_500_after ?? 0,
      latencyMs: out.latency_ms ?? 0,
    }
  })
export type SandboxFaults = z.output<typeof sandboxFaultsSchema>

export const envSchema = z.object({
  PORT: int(0, 65535).default(3000),
  HOST: z.string().trim().min(1, { error: 'is blank: set an address to listen on, e.g. 127.0.0.1 or 0.0.0.0' }).default('127.0.0.1'),
  DATA_DIR: z.string().trim().min(1, { error: 'is blank: set a folder, e.g. ./data' }).default('./data'),
  DATABASE_URL: z
    .string()
    .trim()
    .refine((u) => /^(sqlite:|postgres(ql)?:\/\/)/.test(u), { error: 'must start with sqlite: or postgres://' })
    .refine((u) => !/^sqlite:(\/\/)?\s*$/.test(u), { error: 'names no file: sqlite:<path>, e.g. sqlite:./data/switchboard.db' })
    .superRefine((u, ctx) => {
      // node-postgres reads neither (other tools do): the tables went to "public" without a word.
      const param = /^postgres(ql)?:\/\//.test(u) ? /[?&](schema|search_path|currentSchema)=([^&]*)/i.exec(u) : null
      if (param) {
        const schema = decodeURIComponent(param[2]!) || 'my_schema'
        ctx.addIssue({ code: 'custom', message: `has ?${param[1]}=, which the Postgres driver ignores (the tables would go to "public"): pick the schema with ?options=-c%20search_path%3D${encodeURIComponent(schema)}` })
      } else if (/^postgres(ql)?:\/\//.test(u) && !postgresDriverReads(u)) {
        ctx.addIssue({ code: 'custom', message: 'is not a URL the Postgres driver can read: percent-encode any @ : / ? # or space in the user name and password (# as %23, / as %2F), and name one host[:port], the port at most 65535' })
      }
    })
    .optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DB_SLOW_STATEMENT_MS: int(0, 3_600_000).default(2_000),

  // Blank (a variable set to spaces) is refused, not read as a key: it would leave sandbox mode for a key that fails.
  VOICE_API_KEY: z.string().trim().min(1, { error: 'is blank: unset it for sandbox mode, or set the workspace key' }).optional(),
  VOICE_API_REGION: z.enum(['global', 'india']).default('global'),
  VOICE_API_BASE_URL: baseUrl.optional(),
  UPSTREAM_TIMEOUT_MS: int(100, 600_000).default(15_000),

  WEBHOOK_SECRET: secretList.default([]),
  WEBHOOK_TOLERANCE_SECONDS: int(0, 86_400 * 7).default(300),
  WEBHOOK_MAX_BYTES: int(256, 64 * 1024 * 1024).default(1_048_576),
  WEBHOOK_ALLOW_UNSIGNED: bool.default(false),
  WEBHOOK_TARGETS: jsonObject
    .pipe(z.record(z.string(), webhookTargetSchema))
    .superRefine((targets, ctx) => {
      for (const name of Object.keys(targets)) {
        // /webhooks/formant is the provider's default target, verified with WEBHOOK_SECRET: a named one would replace it.
        if (name.toLowerCase() === 'formant') {
          ctx.addIssue({ code: 'custom', message: 'cannot name a target "formant": that is the default target (/webhooks/formant, set by WEBHOOK_SECRET); pick another name' })
        } else if (!/^[a-z0-9][a-z0-9_-]{0,62}$/i.test(name)) {
          ctx.addIssue({ code: 'custom', message: `target names are letters, digits, - and _ (at most 63, a letter or digit first; got "${name.slice(0, 70)}")` })
        }
      }
    })
    .default({}),
  EVENT_RETENTION_DAYS: int(30, 3650).default(30),
  // 0 keeps call history for good; otherwise at least 40 days: a report's 30-day trend reads 30 days back, and the
  // follow-up planner a contact's calls 37 (its attempt cap would forget calls purged sooner).
  HISTORY_RETENTION_DAYS: int(0, 36_500)
    .refine((days) => days === 0 || days >= 40, { error: 'must be 0 (keep call history for good) or at least 40 (the daily report reads 30 days back, follow-up planning 37)' })
    .default(0),
  PROCESSING_MAX_ATTEMPTS: int(1, 100).default(8),
  RECONCILE_INTERVAL_SECONDS: int(0, 86_400).default(300),

  DESTINATIONS: destinationsSchema.default([]),
  ALLOW_PRIVATE_DESTINATIONS: bool.default(false),
  // Event pipeline (processing, recipe event batches, the paced call queue, readiness).
  // Under an hour, with room: a run still marked running after an hour is taken for a crashed process's and closed
  // (src/recipes/overlap.ts RUN_STALE_MS), so a longer limit let a second run of the recipe start beside a live one.
  RECIPE_TIMEOUT_SECONDS: int(1, 3_000).default(300),
  RECIPE_BATCH_MAX: int(1, 10_000).default(500),
  RECIPE_BATCH_WAIT_MS: int(0, 60_000).default(0),
  CALL_QUEUE_CONCURRENCY: int(1, 1_000).default(32),
  PROCESSING_NICE: int(0, 19).default(5),
  PROCESSING_YIELD_ABOVE: int(0, 1_000_000).default(3_000),
  BACKLOG_DEGRADED_SECONDS: int(1, 86_400).default(60),

  // Trimmed: a token pasted with a trailing space (a Docker env-file) could never be typed or sent back (the bearer
  // header and the login form are trimmed), which would lock the operator out.
  // Sent back as a bearer token (an HTTP header): a space, a line break or a non-ASCII letter inside it could never be.
  ADMIN_TOKEN: z
    .string()
    .trim()
    .min(16, { error: 'must be at least 16 characters' })
    .regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII without spaces (it is sent as a bearer token)' })
    .optional(),

  PROXY_KEY_WINDOW_SECONDS: int(0, 86_400).default(60),
  PROXY_CACHE_MAX_BYTES: int(1024, 64 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  PROXY_RECORDINGS_MAX_BYTES: int(1024, 1024 * 1024 * 1024 * 1024).default(1024 * 1024 * 1024),
  PROXY_MAX_UPLOAD_BYTES: int(1024, 4 * 1024 * 1024 * 1024).default(100 * 1024 * 1024),

  SMTP_URL: z
    .string()
    .refine((u) => /^smtps?:\/\//.test(u), { error: 'must start with smtp:// or smtps://' })
    .refine(
      (u) => {
        try {
          return new URL(u).hostname !== ''
        } catch {
          return false
        }
      },
      { error: 'must be a URL: smtp(s)://[user:password@]host[:port]' },
    )
    .optional(),
  // One sender address, checked as REPORT_TO is: without one, mail went out with an empty envelope sender and no From.
  MAIL_FROM: z
    .string()
    .trim()
    .superRefine((from, ctx) => {
      // One mailbox with a local part and a domain (a host name alone, `@localhost`, is fine for a sender), read as
      // REPORT_TO is: `a@x b@y` and `a@x\r\nBcc: e@y` became a From of `"b@y" <a@x>` and a group.
      const list = readAddressList(from)
      const refusal: AddressRefusal | undefined = !list.ok ? list.refusal : list.mailboxes.length !== 1 || !/^[^@\s<>]+@[^@\s<>.][^@\s<>]*$/.test(list.mailboxes[0]!.address) ? { entry: from } : undefined
      if (refusal === undefined) return
      const rule = 'must be one email address, e.g. switchboard@example.com or Reports <reports@example.com>'
      ctx.addIssue({ code: 'custom', message: refusal.hint ? `${rule}: ${refusal.hint}` : rule, params: { entry: refusal.entry } })
    })
    .default('switchboard <switchboard@localhost>'),
  REPORT_TO: emailList.default([]),

  RECIPES_DIR: z.string().trim().min(1, { error: 'is blank: set a folder, e.g. ./recipes' }).default('./recipes'),
  RECIPES_TIMEZONE: timeZone.default('Asia/Kolkata'),
  RECIPES_TYPECHECK: bool.default(true),
  DEFAULT_COUNTRY: z
    .string()
    .regex(/^[A-Za-z]{2}$/, { error: 'must be a two-letter country code such as IN' })
    .transform((c) => c.toUpperCase())
    .refine((c) => isSupportedCountry(c), { error: 'is not a country libphonenumber knows (use an ISO 3166 code such as IN, US, GB)' })
    .default('IN'),

  // As `int` above, a number or one written in digits ('60', '0.5'): not true (1), [5] or ' '.
  SANDBOX_SPEED: z
    .union([z.number(), z.string().regex(/^\s*(\d+\.?\d*|\.\d+)\s*$/, { error: 'must be a number' })], { error: 'must be a number' })
    .transform(Number)
    .pipe(z.number({ error: 'must be a number' }).positive({ error: 'must be above 0' }).max(100_000))
    .default(60),
  SANDBOX_FAULTS: sandboxFaultsSchema.prefault(''),
  SANDBOX_RATE_LIMIT: int(1, 1_000_000).default(600),
  SANDBOX_NUMBER_LIMIT: int(1, 1_000_000).default(3),
  SANDBOX_MAX_CALLS: int(1, 1_000_000).default(10),
})

export type EnvInput = z.input<typeof envSchema>
export type Env = z.output<typeof envSchema>
