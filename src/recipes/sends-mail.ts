import { readFileSync } from 'node:fs'

/** A call that mails: the daily report (`ctx.reports.sendDailyReport(…)`) or one message (`ctx.mail.send(…)`). */
const MAIL_CALL = /\bsendDailyReport\s*\(|\bmail\s*\.\s*send\s*\(/

/**
 * Whether a recipe file mails anything, read from its source: what makes the SMTP relay a dependency
 * (`/readyz`, `doctor`). A file that cannot be read does not.
 */
export function recipeSendsMail(file: string): boolean {
  try {
    return MAIL_CALL.test(readFileSync(file, 'utf8'))
  } catch {
    return false
  }
}
