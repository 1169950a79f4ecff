import { Gauge } from 'prom-client'
import type { Runtime } from '../runtime.ts'
import { mailMetrics } from './mail-metrics.ts'
import { createMailTransport } from './mail-transport.ts'

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
/** Longer than one SMTP attempt can take (10 s to connect, 60 s socket timeout). */
export const MAIL_CLAIM_MS = 2 * 60_000

/** The wait after the n-th failed attempt (1-based); the last delay repeats. */
export function retryDelayMs(attempts: number): number {
  return MAIL_RETRY_DELAYS_MS[Math.min(Math.max(attempts, 1), MAIL_RETRY_DELAYS_MS.length) - 1]!
}

export type DeliveryOutcome =
  | { status: 'sent'; attempts: number }
  | { status: 'queued'; attempts: number; error: string; nextAttemptAt: number }
  | { status: 'failed'; attempts: number; error: string }
  /** Another process holds it, or it is no longer queued. */
  | { status: 'skipped' }

/** A 5xx SMTP reply is the server's final word (bad recipient, refused content); retrying cannot help. */
function isPermanent(error: unknown): boolean {
  const code = (error as { responseCode?: unknown }).responseCode
  return typeof code === 'number' && code >= 500 && code < 600
}

export function describeMailError(error: unknown): string {
  const e = error as { message?: string; code?: string; response?: string }
  return [e.code, e.response ?? e.message ?? String(error)].filter(Boolean).join(': ').replace(/\s+/g, ' ').slice(0, 500)
}

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
 */
export async function deliverQueued(rt: Runtime, id: string, owner: string, options: { alreadyClaimed?: boolean } = {}): Promise<DeliveryOutcome> {
  if (!options.alreadyClaimed && !(await claim(rt, id, owner))) return { status: 'skipped' }
  const row = await rt.store.db
    .selectFrom('mail_log')
    .select(['raw', 'recipients', 'attempts', 'created_at', 'message_id'])
    .where('id', '=', id)
    .where('claimed_by', '=', owner)
    .executeTakeFirst()
  if (!row?.raw) return { status: 'skipped' }
  const attempts = Number(row.attempts) + 1
  const to = row.recipients.split(',').map((s) => s.trim()).filter(Boolean)
  const log = rt.log.child({ mail_id: id, transport: 'smtp' })
  const metrics = mailMetrics(rt.metrics)
  const settle = (patch: { status: string; error: string | null; next_attempt_at: number | null; raw?: null }) =>
    rt.store.db
      .updateTable('mail_log')
      .set({ ...patch, attempts, claimed_by: null, claimed_until: null, updated_at: rt.clock.now() })
      .where('id', '=', id)
      .where('claimed_by', '=', owner)
      .execute()

  const { transporter } = createMailTransport(rt.config)
  try {
    await transporter.sendMail({ envelope: { from: rt.config.mail.from, to }, raw: Buffer.from(row.raw, 'utf8') })
  } catch (error) {
    const message = describeMailError(error)
    const now = rt.clock.now()
    if (isPermanent(error) || now - Number(row.created_at) >= MAIL_GIVE_UP_MS) {
      await settle({ status: 'failed', error: message, next_attempt_at: null })
      metrics.failures.inc({ transport: 'smtp' })
      log.error({ attempts, error: message, recipients: to }, 'mail failed: not retried')
      return { status: 'failed', attempts, error: message }
    }
    const nextAttemptAt = now + retryDelayMs(attempts)
    await settle({ status: 'queued', error: message, next_attempt_at: nextAttemptAt })
    log.warn({ attempts, error: message, next_attempt_at: new Date(nextAttemptAt).toISOString() }, 'mail relay unavailable; message queued in the outbox')
    return { status: 'queued', attempts, error: message, nextAttemptAt }
  } finally {
    transporter.close()
  }
  // The bytes are no longer needed once the relay has them.
  await settle({ status: 'sent', error: null, next_attempt_at: null, raw: null })
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

/** Serving: retries queued mail every OUTBOX_POLL_MS on the runtime's clock. Returns the stop function. */
export function startMailOutbox(rt: Runtime): () => Promise<void> {
  registerOutboxMetrics(rt)
  if (!rt.config.mail.smtpUrl) return async () => {}
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
    await running
  }
}
