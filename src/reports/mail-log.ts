import type { Selectable } from 'kysely'
import type { MailLogTable } from '../db/schema.ts'
import type { Runtime } from '../runtime.ts'
import { addressKey, parseMailboxes, parseRecipients } from '../utils/mail-addresses.ts'

export type MailStatus = 'queued' | 'sent' | 'written' | 'failed'

export interface MailLogEntry {
  id: string
  messageId: string | null
  recipients: string[]
  subject: string
  status: MailStatus
  attempts: number
  error: string | null
  /** When a queued message is tried next (null once settled). */
  nextAttemptAt: number | null
  createdAt: number
  updatedAt: number
}

/**
 * Records a send before the first attempt, so a crash mid-send still leaves a trace. With `raw`, the
 * message waits in the outbox (status `queued`) until it is delivered.
 */
export async function insertMailLog(
  rt: Runtime,
  entry: {
    id: string
    recipients: string[]
    subject: string
    messageId?: string | null
    raw?: string | null
    nextAttemptAt?: number | null
    /** The process that makes the first attempt right away. */
    claim?: { by: string; until: number }
    /** Settled already (the outbox's .eml written, or not): `queued` when absent. */
    settled?: { status: 'written' | 'failed'; error: string | null }
  },
): Promise<void> {
  const now = rt.clock.now()
  await rt.store.db
    .insertInto('mail_log')
    .values({
      id: entry.id,
      message_id: entry.messageId ?? null,
      recipients: entry.recipients.join(', '),
      subject: entry.subject,
      status: entry.settled?.status ?? 'queued',
      attempts: entry.settled ? 1 : 0,
      error: entry.settled?.error ?? null,
      created_at: now,
      updated_at: now,
      raw: entry.raw ?? null,
      next_attempt_at: entry.nextAttemptAt ?? null,
      claimed_by: entry.claim?.by ?? null,
      claimed_until: entry.claim?.until ?? null,
    })
    .execute()
}

export async function updateMailLog(
  rt: Runtime,
  id: string,
  patch: { status: MailStatus; attempts: number; error: string | null; messageId?: string | null },
): Promise<void> {
  await rt.store.db
    .updateTable('mail_log')
    .set({
      status: patch.status,
      attempts: patch.attempts,
      error: patch.error,
      ...(patch.messageId !== undefined ? { message_id: patch.messageId } : {}),
      updated_at: rt.clock.now(),
    })
    .where('id', '=', id)
    .execute()
}

/** What a listing reads: everything but the stored message bytes. */
const ENTRY_COLUMNS = ['id', 'message_id', 'recipients', 'subject', 'status', 'attempts', 'error', 'next_attempt_at', 'created_at', 'updated_at'] as const
type EntryRow = Pick<Selectable<MailLogTable>, (typeof ENTRY_COLUMNS)[number]>

/** The newest sends first; `status` narrows the listing (e.g. the outbox: `queued`). */
export async function listMailLog(rt: Runtime, limit = 50, status?: MailStatus): Promise<MailLogEntry[]> {
  let q = rt.store.db.selectFrom('mail_log').select(ENTRY_COLUMNS)
  if (status) q = q.where('status', '=', status)
  const rows = await q.orderBy('created_at', 'desc').orderBy('id').limit(limit).execute()
  return rows.map(toMailLogEntry)
}

export async function getMailLog(rt: Runtime, id: string): Promise<MailLogEntry | undefined> {
  const row = await rt.store.db.selectFrom('mail_log').select(ENTRY_COLUMNS).where('id', '=', id).executeTakeFirst()
  return row ? toMailLogEntry(row) : undefined
}

/**
 * The newest mail with this subject handed to the relay or the outbox (queued, sent or written) when such mail
 * covers every address of `to` (a relay's partial refusal splits one message into several rows), else undefined.
 */
export async function findHandedOverMail(rt: Runtime, subject: string, to: readonly string[]): Promise<MailLogEntry | undefined> {
  const rows = await rt.store.db
    .selectFrom('mail_log')
    .select(ENTRY_COLUMNS)
    .where('subject', '=', subject)
    .where('status', '!=', 'failed')
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute()
  const entries = rows.map(toMailLogEntry)
  const covered = new Set(entries.flatMap((e) => parseMailboxes(e.recipients).map((m) => addressKey(m.address))))
  const wanted = parseMailboxes(to).map((m) => addressKey(m.address))
  return entries.length > 0 && wanted.length > 0 && wanted.every((a) => covered.has(a)) ? entries[0] : undefined
}

/** Sends since an instant, by status (the overview's outbox figures). */
export async function countMailByStatus(rt: Runtime, sinceMs: number): Promise<Record<MailStatus, number>> {
  const rows = await rt.store.db
    .selectFrom('mail_log')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', sinceMs)
    .groupBy('status')
    .execute()
  const out: Record<MailStatus, number> = { queued: 0, sent: 0, written: 0, failed: 0 }
  for (const r of rows) if (r.status in out) out[r.status as MailStatus] = Number(r.n)
  return out
}

function toMailLogEntry(r: EntryRow): MailLogEntry {
  return {
    id: r.id,
    messageId: r.message_id,
    recipients: parseRecipients(r.recipients),
    subject: r.subject,
    status: r.status as MailStatus,
    attempts: Number(r.attempts),
    error: r.error,
    nextAttemptAt: r.status === 'queued' && r.next_attempt_at !== null ? Number(r.next_attempt_at) : null,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  }
}
