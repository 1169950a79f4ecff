import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { composeMail, type MailMessage } from './compose-mail.ts'
import { insertMailLog, type MailStatus } from './mail-log.ts'
import { mailMetrics } from './mail-metrics.ts'
import { MAIL_CLAIM_MS, deliverQueued, describeMailError, type RefusedRecipients } from './mail-outbox.ts'
import { writeOutboxMessage } from './outbox.ts'
import { accessProblem } from '../utils/access-problem.ts'
import { strictRecipients } from '../utils/mail-addresses.ts'
import { timeOrderedId } from '../utils/time-ordered-id.ts'

export type { MailAttachment, MailMessage } from './compose-mail.ts'

export interface MailResult {
  /** The mail_log id. */
  id: string
  /**
   * `sent` (the relay took it), `written` (the .eml is in DATA_DIR/outbox), `queued` (the relay did not
   * answer: the message waits in the outbox and the running service retries it), `failed` (refused for
   * good), `planned` in a dry run (nothing sent, nothing recorded).
   */
  status: MailStatus | 'planned'
  messageId?: string
  /** The .eml written, for the outbox. */
  file?: string
  error?: string
  /** When a queued message is tried next (epoch ms). */
  nextAttemptAt?: number
  /**
   * Recipients the relay refused while it took the message for others: each group has its own mail_log
   * row, `queued` (refused for now; retried for them alone) or `failed` (refused for good, with the reply).
   */
  refused?: RefusedRecipients[]
}

export { MAIL_RETRY_DELAYS_MS, MAIL_GIVE_UP_MS } from './mail-outbox.ts'

/**
 * Sends one message: over SMTP_URL, or into DATA_DIR/outbox as an .eml without it. Every send is a
 * mail_log row. Over SMTP the message is stored first and tried once at once; if the relay does not
 * answer, it stays queued and the running service (`serve`) retries it with backoff — the caller gets
 * `queued` and is not held up. A permanent refusal (5xx) is `failed`, logged and counted in
 * `switchboard_mail_failures_total`. Recipients refused while others were reached are in `refused`. It
 * resolves in every case — check `status`. In a dry run nothing is sent or recorded; a `mail` effect is
 * added to the plan.
 */
export async function sendMail(rt: Runtime, message: MailMessage, effects: Effects): Promise<MailResult> {
  // Read strictly, as REPORT_TO is: a recipe's `to: 'a@x b@y'` is refused, not sent to one of them.
  const to = strictRecipients(message.to, 'mail recipients (to)')
  // A dry run only plans the mail; a plan without a recipient still shows what would be sent.
  if (to.length === 0 && !effects.dryRun) throw new Error('mail has no recipient: pass one, or set REPORT_TO')
  const id = timeOrderedId(rt.clock.now(), rt.random)
  effects.plan.push({ kind: 'mail', to, subject: message.subject, attachments: (message.attachments ?? []).map((a) => a.filename) })
  if (effects.dryRun) return { id, status: 'planned' }

  const now = rt.clock.now()
  const composed = await composeMail(rt.config.mail.from, to, message, now)
  const messageId = composed.messageId
  if (!rt.config.mail.smtpUrl) {
    // The file first, then its row, settled, in one statement: a row is never left `queued` with nothing to send (a
    // failed update after the write kept the pending gauge up for good and failed a send that had happened).
    const log = rt.log.child({ mail_id: id, transport: 'outbox' })
    const row = { id, recipients: to, subject: message.subject, messageId: messageId ?? null }
    let file: string
    try {
      file = await writeOutboxMessage(rt.config.dataDir, id, now, composed.raw)
    } catch (error) {
      // Another user's outbox folder is said as such (which folder, whose, the way out), not as a bare EACCES.
      const reason = accessProblem(error) ?? describeMailError(error)
      await insertMailLog(rt, { ...row, settled: { status: 'failed', error: reason } })
      mailMetrics(rt.metrics).failures.inc({ transport: 'outbox' })
      log.error({ error: reason }, 'mail could not be written to the outbox')
      return { id, status: 'failed', error: reason }
    }
    await insertMailLog(rt, { ...row, settled: { status: 'written', error: null } })
    mailMetrics(rt.metrics).sent.inc({ transport: 'outbox' })
    log.info({ message_id: messageId, file }, 'mail written to the outbox')
    return { id, status: 'written', ...(messageId ? { messageId } : {}), file }
  }

  // Stored (with this process's claim) before the first attempt: whatever happens next, it is not lost.
  const owner = `${rt.instanceId}:send`
  await insertMailLog(rt, {
    id,
    recipients: to,
    subject: message.subject,
    messageId: messageId ?? null,
    raw: composed.raw.toString('utf8'),
    nextAttemptAt: now,
    claim: { by: owner, until: now + MAIL_CLAIM_MS },
  })
  const outcome = await deliverQueued(rt, id, owner, { alreadyClaimed: true })
  const base = { id, ...(messageId ? { messageId } : {}) }
  switch (outcome.status) {
    case 'sent':
      return { ...base, status: 'sent', ...(outcome.refused ? { refused: outcome.refused } : {}) }
    case 'queued':
      return { ...base, status: 'queued', error: outcome.error, nextAttemptAt: outcome.nextAttemptAt, ...(outcome.refused ? { refused: outcome.refused } : {}) }
    case 'failed':
      return { ...base, status: 'failed', error: outcome.error }
    case 'skipped':
      return { ...base, status: 'queued' }
  }
}
