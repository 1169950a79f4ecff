import type { Runtime } from '../runtime.ts'

export type MailStatus = 'queued' | 'sent' | 'written' | 'failed'

export interface MailLogEntry {
  id: string
  messageId: string | null
  recipients: string[]
  subject: string
  status: MailStatus
  attempts: number
  error: string | null
  createdAt: number
  updatedAt: number
}

/** Records a send before the first attempt, so a crash mid-send still leaves a trace. */
export async function insertMailLog(rt: Runtime, entry: { id: string; recipients: string[]; subject: string }): Promise<void> {
  const now = rt.clock.now()
  await rt.store.db
    .insertInto('mail_log')
    .values({
      id: entry.id,
      message_id: null,
      recipients: entry.recipients.join(', '),
      subject: entry.subject,
      status: 'queued',
      attempts: 0,
      error: null,
      created_at: now,
      updated_at: now,
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

/** The newest sends first. */
export async function listMailLog(rt: Runtime, limit = 50): Promise<MailLogEntry[]> {
  const rows = await rt.store.db.selectFrom('mail_log').selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).execute()
  return rows.map((r) => ({
    id: r.id,
    messageId: r.message_id,
    recipients: r.recipients.split(',').map((s) => s.trim()).filter(Boolean),
    subject: r.subject,
    status: r.status as MailStatus,
    attempts: Number(r.attempts),
    error: r.error,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  }))
}
