import { Gauge } from 'prom-client'
import type { Runtime } from '../runtime.ts'
import { mailMetrics } from './mail-metrics.ts'
import { createMailTransport } from './mail-transport.ts'
import { formatMailbox, parseMailboxes, sameAddress } from '../utils/mail-addresses.ts'
import { timeOrderedId } from '../utils/time-ordered-id.ts'
import { every } from '../utils/every.ts'
import { writeAgain } from '../utils/write-again.ts'

/**
 * The mail outbox. A message for the SMTP relay is stored with its bytes (mail_log.raw) before the first
 * attempt; one that cannot be delivered stays `queued` and the running service retries it on this backoff
 * until the relay answers, so a report due while the relay is down is sent once, when it is back.
 * Claims (claimed_by/claimed_until) make one process deliver each message, also with several replicas.
 */
export const MAIL_RETRY_DELAYS_MS = [30_000, 60_000, 120_000, 300_000, 600_000, 900_000] as const
/** A message still undelivered this long after it was queued is given up on (`failed`). */
export const MAIL_GIVE_UP_MS = 24 * 60 * 60_000
/** How often the service looks for queued messages that fell due. */
export const OUTBOX_POLL_MS = 15_000
/** How long a claim lasts; an attempt renews it every third of this while it talks to the relay. */
export const MAIL_CLAIM_MS = 2 * 60_000
/** A sent mail whose record the database refuses is recorded again this often, this many times (within its claim). */
const SENT_RECORD_RETRY_MS = 2_000
const SENT_RECORD_TRIES = 5

/** The wait after the n-th failed attempt (1-based); the last delay repeats. */
export function retryDelayMs(attempts: number): number {
  return MAIL_RETRY_DELAYS_MS[Math.min(Math.max(attempts, 1), MAIL_RETRY_DELAYS_MS.length) - 1]!
}

/**
 * Recipients the relay refused while it took the message for others, moved to a mail_log row of their own:
 * `queued` (a temporary 4xx refusal: the outbox retries them, and only them) or `failed` (a 5xx refusal,
 * one row per recipient, with the server's reply).
 */
export interface RefusedRecipients {
  mailId: string
  recipients: string[]
  status: 'queued' | 'failed'
  error: string
  nextAttemptAt?: number
}

export type DeliveryOutcome =
  | { status: 'sent'; attempts: number; refused?: RefusedRecipients[] }
  | { status: 'queued'; attempts: number; error: string; nextAttemptAt: number; refused?: RefusedRecipients[] }
  | { status: 'failed'; attempts: number; error: string }
  /** Another process holds it, or it is no longer queued. */
  | { status: 'skipped' }

/** A 5xx SMTP reply is the server's final word (bad recipient, refused content); retrying cannot help. */
function isPermanent(error: unknown): boolean {
  const code = (error as { responseCode?: unknown }).responseCode
  return typeof code === 'number' && code >= 500 && code < 600
}

/**
 * A mail error as the outbox keeps it (the Mail page, `mail list`, the log): one line, without SMTP_URL's password —
 * a relay that quotes what it was sent (`535 bad credentials for user:password`) put it on the page.
 */
export function describeMailError(error: unknown, smtpUrl?: string): string {
  const e = error as { message?: string; code?: string; response?: string }
  const text = e.response ?? e.message ?? String(error)
  // Node's own errors start with their code already (`EEXIST: file already exists, mkdir …`): said once.
  const line = [e.code && !text.startsWith(`${e.code}:`) ? e.code : undefined, text].filter(Boolean).join(': ').replace(/\s+/g, ' ')
  return withoutPassword(line, smtpUrl).slice(0, 500)
}

/** `text` without the password of `url` (as written in it, and decoded). */
function withoutPassword(text: string, url: string | undefined): string {
  if (!url) return text
  let password: string
  try {
    password = new URL(url).password
  } catch {
    return text
  }
  let shown = text
  for (const form of new Set([password, safeDecode(password)])) if (form.length >= 4) shown = shown.split(form).join('[redacted]')
  return shown
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** One recipient refused at RCPT TO, with the relay's reply. */
interface Refusal {
  address: string
  permanent: boolean
  error: string
}

/**
 * The recipients refused in a send result (nodemailer resolves once one recipient is accepted and lists
 * the others in `rejected`/`rejectedErrors`) or in the error of a send that every recipient refused.
 */
function refusalsOf(source: unknown, smtpUrl: string | undefined): Refusal[] {
  const { rejected, rejectedErrors } = source as { rejected?: unknown; rejectedErrors?: unknown }
  const refusals: Refusal[] = (Array.isArray(rejectedErrors) ? rejectedErrors : []).flatMap((e: unknown) => {
    const address = (e as { recipient?: unknown }).recipient
    return typeof address === 'string' ? [{ address, permanent: isPermanent(e), error: describeMailError(e, smtpUrl) }] : []
  })
  // Refused without a reply on record: nothing says it was final, so it is retried.
  for (const address of Array.isArray(rejected) ? rejected : []) {
    if (typeof address === 'string' && !refusals.some((r) => sameAddress(r.address, address))) refusals.push({ address, permanent: false, error: 'refused by the relay' })
  }
  return refusals
}

/** The relay's replies, each after its address — but a lone one's, whose row names that address already (it was said twice). */
const describeRefusals = (refusals: Refusal[]) =>
  (refusals.length === 1 ? refusals[0]!.error : refusals.map((r) => `${r.address}: ${r.error}`).join('; ')).slice(0, 500)

/** Claims a queued message that is due (or already claimed by `owner`); false when someone else has it. */
async function claim(rt: Runtime, id: string, owner: string): Promise<boolean> {
  const now = rt.clock.now()
  const result = await rt.store.db
    .updateTable('mail_log')
    .set({ claimed_by: owner, claimed_until: now + MAIL_CLAIM_MS })
    .where('id', '=', id)
    .where('status', '=', 'queued')
    .where('raw', 'is not', null)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now), eb('claimed_by', '=', owner)]))
    .executeTakeFirst()
  return Number(result.numUpdatedRows) === 1
}

/**
 * One delivery attempt of a queued message. `alreadyClaimed`: the caller inserted the row with its claim
 * (the first attempt, right after queueing).
 *
 * A relay that takes the message for some recipients and refuses others splits it: this row is settled
 * for the recipients it reached (`sent`; or `queued` for those refused for now, when it reached nobody),
 * and the others get rows of their own — `queued` with the same bytes for a temporary refusal, so a retry
 * goes to them alone and nobody gets a second copy; `failed` with the server's reply for a permanent one.
 */
export async function deliverQueued(rt: Runtime, id: string, owner: string, options: { alreadyClaimed?: boolean } = {}): Promise<DeliveryOutcome> {
  if (!options.alreadyClaimed && !(await claim(rt, id, owner))) return { status: 'skipped' }
  const row = await rt.store.db
    .selectFrom('mail_log')
    .select(['raw', 'recipients', 'subject', 'attempts', 'created_at', 'message_id'])
    .where('id', '=', id)
    .where('claimed_by', '=', owner)
    .executeTakeFirst()
  if (!row?.raw) return { status: 'skipped' }
  const raw = row.raw
  const attempts = Number(row.attempts) + 1
  const mailboxes = parseMailboxes(row.recipients)
  const to = mailboxes.map(formatMailbox)
  const log = rt.log.child({ mail_id: id, transport: 'smtp' })
  const metrics = mailMetrics(rt.metrics)
  const settle = (patch: { status: string; error: string | null; next_attempt_at: number | null; raw?: null }) =>
    rt.store.db
      .updateTable('mail_log')
      .set({ ...patch, attempts, claimed_by: null, claimed_until: null, updated_at: rt.clock.now() })
      .where('id', '=', id)
      .where('claimed_by', '=', owner)
      .execute()
  const renewClaim = async () =>
    Number((await rt.store.db.updateTable('mail_log').set({ claimed_until: rt.clock.now() + MAIL_CLAIM_MS }).where('id', '=', id).where('claimed_by', '=', owner).executeTakeFirst()).numUpdatedRows) === 1
  /**
   * What the relay took is recorded again while the database refuses it (src/utils/write-again.ts): until the row
   * says `sent`, only its claim keeps the outbox from sending the message a second time.
   */
  const recordSent = <T>(write: () => Promise<T>): Promise<T> =>
    writeAgain(rt.clock, write, {
      tries: SENT_RECORD_TRIES,
      everyMs: SENT_RECORD_RETRY_MS,
      stillOurs: renewClaim,
      onFirstFailure: (error) => log.warn({ err: describeMailError(error, rt.config.mail.smtpUrl) }, 'the relay took the mail but recording it failed; trying again while its claim holds'),
    })

  let failure: { error: unknown } | undefined
  let refusals: Refusal[] = []
  const { transporter } = createMailTransport(rt.config)
  // A relay may take longer than one claim (a slow one, a large attachment: the socket timeout is an idle timeout):
  // the claim is renewed meanwhile, so no outbox — this process's or another replica's — sends the message again.
  const stopRenewing = every(rt.clock, rt.log, 'renewing a mail claim', MAIL_CLAIM_MS / 3, MAIL_CLAIM_MS / 3, renewClaim)
  try {
    const info: unknown = await transporter.sendMail({ envelope: { from: rt.config.mail.from, to: mailboxes.map((m) => m.address) }, raw: Buffer.from(raw, 'utf8') })
    refusals = refusalsOf(info, rt.config.mail.smtpUrl)
  } catch (error) {
    failure = { error }
  } finally {
    await stopRenewing()
    transporter.close()
  }
  const now = rt.clock.now()
  const givenUp = now - Number(row.created_at) >= MAIL_GIVE_UP_MS

  /** Settles this row for one group of recipients and gives each other group a row of its own, in one transaction. */
  const split = async (accepted: string[], refused: Refusal[]): Promise<DeliveryOutcome> => {
    const recipientsOf = (rs: Refusal[]) => mailboxes.filter((m) => rs.some((r) => sameAddress(r.address, m.address))).map(formatMailbox)
    // After a day of trying, a temporary refusal is final too.
    const retry = givenUp ? [] : refused.filter((r) => !r.permanent)
    const refusedForGood = refused.filter((r) => !retry.includes(r))
    const nextAttemptAt = now + retryDelayMs(attempts)
    const retryRow: RefusedRecipients | undefined = retry.length
      ? { mailId: '', recipients: recipientsOf(retry), status: 'queued', error: describeRefusals(retry), nextAttemptAt }
      : undefined
    // This row keeps the recipients the relay took, else those it is retried for, else those refused for good.
    const own = accepted.length
      ? { status: 'sent', recipients: accepted.join(', '), error: null, next_attempt_at: null, raw: null }
      : retryRow
        ? { status: 'queued', recipients: retryRow.recipients.join(', '), error: retryRow.error, next_attempt_at: nextAttemptAt }
        : { status: 'failed', recipients: recipientsOf(refusedForGood).join(', '), error: describeRefusals(refusedForGood), next_attempt_at: null, raw: null }
    const newRows: RefusedRecipients[] = [
      ...(accepted.length && retryRow ? [{ ...retryRow, mailId: timeOrderedId(now, rt.random) }] : []),
      ...(own.status === 'failed' ? [] : refusedForGood).map((r): RefusedRecipients => ({ mailId: timeOrderedId(now, rt.random), recipients: recipientsOf([r]), status: 'failed', error: r.error })),
    ]
    const write = () => rt.store.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('mail_log')
        .set({ ...own, attempts, claimed_by: null, claimed_until: null, updated_at: now })
        .where('id', '=', id)
        .where('claimed_by', '=', owner)
        .executeTakeFirst()
      // The claim lapsed and another process has the message: it records the attempt it makes.
      if (Number(updated.numUpdatedRows) !== 1) return false
      if (newRows.length === 0) return true
      await trx
        .insertInto('mail_log')
        .values(
          newRows.map((r) => ({
            id: r.mailId,
            message_id: row.message_id,
            recipients: r.recipients.join(', '),
            subject: row.subject,
            status: r.status,
            attempts,
            error: r.error,
            // The day before giving up counts from when the message was first queued.
            created_at: Number(row.created_at),
            updated_at: now,
            raw: r.status === 'queued' ? raw : null,
            next_attempt_at: r.nextAttemptAt ?? null,
            claimed_by: null,
            claimed_until: null,
          })),
        )
        .execute()
      return true
    })
    // Sent to some: recorded again while the database refuses it, as a whole send is (recordSent).
    const settled = await (accepted.length ? recordSent(write) : write())
    if (!settled) return { status: 'skipped' }
    for (const r of newRows.filter((n) => n.status === 'failed')) {
      metrics.failures.inc({ transport: 'smtp' })
      log.error({ attempts, error: r.error, recipients: r.recipients, refused_mail_id: r.mailId }, 'mail refused for a recipient: not retried')
    }
    const retried = newRows.find((n) => n.status === 'queued')
    if (retried) log.warn({ attempts, error: retried.error, recipients: retried.recipients, refused_mail_id: retried.mailId }, 'mail refused for now for some recipients; they alone are retried')
    if (accepted.length) {
      metrics.sent.inc({ transport: 'smtp' })
      log.info({ attempts, message_id: row.message_id, recipients: accepted }, 'mail sent to some of its recipients')
      return { status: 'sent', attempts, refused: newRows }
    }
    if (!retryRow) {
      metrics.failures.inc({ transport: 'smtp' })
      log.error({ attempts, error: own.error, recipients: to }, 'mail failed: not retried')
      return { status: 'failed', attempts, error: own.error ?? '' }
    }
    log.warn({ attempts, error: retryRow.error, next_attempt_at: new Date(nextAttemptAt).toISOString() }, 'mail refused for now; queued in the outbox')
    return { status: 'queued', attempts, error: retryRow.error, nextAttemptAt, refused: newRows }
  }

  if (failure) {
    const refused = refusalsOf(failure.error, rt.config.mail.smtpUrl)
    // Every recipient refused, some for good and some for now: each group is settled its own way.
    if (!givenUp && refused.some((r) => r.permanent) && refused.some((r) => !r.permanent)) return split([], refused)
    let message = describeMailError(failure.error, rt.config.mail.smtpUrl)
    if (isPermanent(failure.error) || givenUp) {
      // Said as such: a failed row showed the relay's last "try again later", and nothing of the day of tries before it.
      if (!isPermanent(failure.error)) message = `given up after ${attempts} attempts over ${Math.round(MAIL_GIVE_UP_MS / 3_600_000)} h; the relay's last answer: ${message}`
      await settle({ status: 'failed', error: message, next_attempt_at: null })
      metrics.failures.inc({ transport: 'smtp' })
      log.error({ attempts, error: message, recipients: to }, 'mail failed: not retried')
      return { status: 'failed', attempts, error: message }
    }
    const nextAttemptAt = now + retryDelayMs(attempts)
    await settle({ status: 'queued', error: message, next_attempt_at: nextAttemptAt })
    log.warn({ attempts, error: message, next_attempt_at: new Date(nextAttemptAt).toISOString() }, 'mail relay unavailable; message queued in the outbox')
    return { status: 'queued', attempts, error: message, nextAttemptAt }
  }
  if (refusals.length > 0) {
    const accepted = mailboxes.filter((m) => !refusals.some((r) => sameAddress(r.address, m.address))).map(formatMailbox)
    return split(accepted, refusals)
  }
  // The bytes are no longer needed once the relay has them.
  await recordSent(() => settle({ status: 'sent', error: null, next_attempt_at: null, raw: null }))
  metrics.sent.inc({ transport: 'smtp' })
  log.info({ attempts, message_id: row.message_id, recipients: to }, 'mail sent')
  return { status: 'sent', attempts }
}

/** Delivers every queued message that is due; returns the outcomes. */
export async function deliverDue(rt: Runtime, owner: string, limit = 20): Promise<DeliveryOutcome[]> {
  const now = rt.clock.now()
  const due = await rt.store.db
    .selectFrom('mail_log')
    .select('id')
    .where('status', '=', 'queued')
    .where('raw', 'is not', null)
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit)
    .execute()
  const outcomes: DeliveryOutcome[] = []
  for (const { id } of due) outcomes.push(await deliverQueued(rt, id, owner))
  return outcomes
}

const gauges = new WeakMap<Runtime, true>()

/** `switchboard_mail_pending` and the age of the oldest, read from the outbox at each scrape. */
export function registerOutboxMetrics(rt: Runtime): void {
  // The counters too, where mail is sent and retried: /metrics lists them (at 0) before the first mail.
  mailMetrics(rt.metrics)
  if (gauges.has(rt) || rt.metrics.getSingleMetric('switchboard_mail_pending')) return
  gauges.set(rt, true)
  const pending = async () =>
    rt.store.db
      .selectFrom('mail_log')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<number>('created_at').as('oldest')])
      .where('status', '=', 'queued')
      .executeTakeFirst()
  new Gauge({
    name: 'switchboard_mail_pending',
    help: 'Mail messages waiting in the outbox for the SMTP relay',
    registers: [rt.metrics],
    async collect() {
      // A scrape during a database outage keeps the last value rather than failing /metrics.
      const row = await pending().catch(() => undefined)
      if (row) this.set(Number(row.n))
    },
  })
  new Gauge({
    name: 'switchboard_mail_oldest_pending_seconds',
    help: 'Age of the oldest message waiting in the outbox (0 when none)',
    registers: [rt.metrics],
    async collect() {
      const row = await pending().catch(() => undefined)
      if (row) this.set(row.oldest === null || row.oldest === undefined ? 0 : Math.max(0, (rt.clock.now() - Number(row.oldest)) / 1000))
    },
  })
}

/**
 * A service with no SMTP_URL sends no queued mail: what another process queued for its relay (`report send` with its
 * own SMTP_URL, a service started with one before) waited there without a word, past the day it is given up after.
 * Said once at start, with what to do.
 */
function warnIfMailWaits(rt: Runtime): void {
  rt.store.db
    .selectFrom('mail_log')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('status', '=', 'queued')
    .executeTakeFirst()
    .then((row) => {
      const n = Number(row?.n ?? 0)
      if (n > 0) rt.log.warn({ queued: n }, `${n} mail message${n === 1 ? '' : 's'} wait${n === 1 ? 's' : ''} in the outbox for an SMTP relay, but this service has no SMTP_URL: nothing is sent until it is set (mail list --status queued shows them)`)
    })
    .catch(() => undefined)
}

/** Serving: retries queued mail every OUTBOX_POLL_MS on the runtime's clock. Returns the stop function. */
export function startMailOutbox(rt: Runtime): () => Promise<void> {
  registerOutboxMetrics(rt)
  if (!rt.config.mail.smtpUrl) {
    warnIfMailWaits(rt)
    return async () => {}
  }
  const owner = `${rt.instanceId}:outbox`
  let stopped = false
  let cancel: (() => void) | undefined
  let running: Promise<unknown> | undefined
  const tick = () => {
    running = deliverDue(rt, owner)
      .catch((error) => rt.log.warn({ err: (error as Error).message }, 'mail outbox pass failed; will try again'))
      .finally(() => {
        running = undefined
        if (!stopped) cancel = rt.clock.setTimeout(tick, OUTBOX_POLL_MS)
      })
  }
  cancel = rt.clock.setTimeout(tick, 1_000)
  return async () => {
    stopped = true
    cancel?.()
    if (!running) return
    // A relay gets minutes to answer (mail-transport.ts): a stop does not wait that long. The message's claim lapses and
    // the next start tries it again — which mails it twice if the relay took it meanwhile, as any stop mid-send can.
    let waited: (() => void) | undefined
    const late = new Promise<'late'>((resolve) => (waited = rt.clock.setTimeout(() => resolve('late'), STOP_WAIT_MS)))
    const outcome = await Promise.race([running.then(() => 'done' as const), late])
    waited?.()
    if (outcome === 'late') rt.log.warn({ waited_ms: STOP_WAIT_MS }, 'stopping while a mail is still with the relay: it is tried again at the next start (the relay may have taken it)')
  }
}

/** How long stopping waits for a mail the relay is still answering. */
const STOP_WAIT_MS = 30_000
