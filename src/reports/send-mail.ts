import type { Runtime } from '../runtime.ts'
import { sleep } from '../utils/clock.ts'
import type { Effects } from '../utils/effects.ts'
import { insertMailLog, updateMailLog, type MailStatus } from './mail-log.ts'
import { mailMetrics } from './mail-metrics.ts'
import { createMailTransport } from './mail-transport.ts'
import { writeOutboxMessage } from './outbox.ts'

export interface MailAttachment {
  filename: string
  content: string | Buffer
  contentType?: string
}

export interface MailMessage {
  to: string | string[]
  subject: string
  text: string
  html?: string
  attachments?: MailAttachment[]
}

export interface MailResult {
  /** The mail_log id. */
  id: string
  /** `planned` in a dry run (nothing sent, nothing recorded). */
  status: Exclude<MailStatus, 'queued'> | 'planned'
  messageId?: string
  /** The .eml written, for the outbox. */
  file?: string
  error?: string
}

/** Attempts in all, and the waits between them (on the runtime's clock). */
export const MAIL_RETRY_DELAYS_MS = [2_000, 10_000, 30_000] as const
export const MAIL_MAX_ATTEMPTS = MAIL_RETRY_DELAYS_MS.length + 1

function recipients(to: string | string[]): string[] {
  return (Array.isArray(to) ? to : [to]).flatMap((t) => t.split(',')).map((t) => t.trim()).filter(Boolean)
}

/** A 5xx SMTP reply is the server's final word (bad recipient, refused content); retrying cannot help. */
function isPermanent(error: unknown): boolean {
  const code = (error as { responseCode?: unknown }).responseCode
  return typeof code === 'number' && code >= 500 && code < 600
}

function describe(error: unknown): string {
  const e = error as { message?: string; code?: string; response?: string }
  return [e.code, e.response ?? e.message ?? String(error)].filter(Boolean).join(': ').replace(/\s+/g, ' ').slice(0, 500)
}

/**
 * Sends one message: over SMTP_URL, or into DATA_DIR/outbox as an .eml without it. Every send is a
 * mail_log row; failures are retried with backoff, then logged, recorded as `failed` and counted in
 * `switchboard_mail_failures_total`. It resolves in every case — check `status`. In a dry run nothing is
 * sent or recorded; a `mail` effect is added to the plan.
 */
export async function sendMail(rt: Runtime, message: MailMessage, effects: Effects): Promise<MailResult> {
  const to = recipients(message.to)
  if (to.length === 0) throw new Error('mail has no recipient: pass one, or set REPORT_TO')
  const id = rt.random.uuid()
  effects.plan.push({ kind: 'mail', to, subject: message.subject, attachments: (message.attachments ?? []).map((a) => a.filename) })
  if (effects.dryRun) return { id, status: 'planned' }

  await insertMailLog(rt, { id, recipients: to, subject: message.subject })
  const { kind, transporter } = createMailTransport(rt.config)
  const metrics = mailMetrics(rt.metrics)
  const log = rt.log.child({ mail_id: id, transport: kind })
  let lastError = ''
  try {
    for (let attempt = 1; attempt <= MAIL_MAX_ATTEMPTS; attempt++) {
      try {
        const info = await transporter.sendMail({
          from: rt.config.mail.from,
          to,
          subject: message.subject,
          text: message.text,
          html: message.html,
          attachments: message.attachments,
          date: new Date(rt.clock.now()),
        })
        const messageId = typeof info.messageId === 'string' ? info.messageId : undefined
        if (kind === 'outbox') {
          const file = await writeOutboxMessage(rt.config.dataDir, id, rt.clock.now(), info.message as Buffer)
          await updateMailLog(rt, id, { status: 'written', attempts: attempt, error: null, messageId: messageId ?? null })
          metrics.sent.inc({ transport: kind })
          log.info({ message_id: messageId, file }, 'mail written to the outbox')
          return { id, status: 'written', messageId, file }
        }
        await updateMailLog(rt, id, { status: 'sent', attempts: attempt, error: null, messageId: messageId ?? null })
        metrics.sent.inc({ transport: kind })
        log.info({ message_id: messageId, recipients: to }, 'mail sent')
        return { id, status: 'sent', messageId }
      } catch (error) {
        lastError = describe(error)
        const last = attempt === MAIL_MAX_ATTEMPTS || isPermanent(error)
        await updateMailLog(rt, id, { status: last ? 'failed' : 'queued', attempts: attempt, error: lastError })
        if (last) break
        const delay = MAIL_RETRY_DELAYS_MS[attempt - 1]!
        log.warn({ attempt, retry_in_ms: delay, error: lastError }, 'mail attempt failed; will retry')
        await sleep(rt.clock, delay)
      }
    }
  } finally {
    transporter.close()
  }
  metrics.failures.inc({ transport: kind })
  log.error({ recipients: to, subject: message.subject, error: lastError }, 'mail failed after retries')
  return { id, status: 'failed', error: lastError }
}
