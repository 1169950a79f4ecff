import nodemailer, { type Transporter } from 'nodemailer'
import type { Config } from '../config/load.ts'

export type MailTransportKind = 'smtp' | 'outbox'

/** How long a relay may take to answer once the conversation has started (RFC 5321 §4.5.3.2: up to 10 minutes). */
export const SMTP_REPLY_TIMEOUT_MS = 10 * 60_000

/**
 * SMTP_URL set → SMTP (smtp:// upgrades with STARTTLS when the server offers it; smtps:// is TLS from the
 * first byte; user:password in the URL authenticates). Unset → nodemailer's stream transport, which
 * produces the RFC 822 bytes for the outbox instead of sending them.
 */
export function createMailTransport(config: Config): { kind: MailTransportKind; transporter: Transporter } {
  if (config.mail.smtpUrl) {
    return {
      kind: 'smtp',
      transporter: nodemailer.createTransport({
        url: config.mail.smtpUrl,
        // A relay that is down or does not greet fails the attempt in seconds: retries are ours.
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        // Once talking, a relay gets RFC 5321's longest wait (§4.5.3.2.6, 10 minutes for the reply to the end of the
        // message): nodemailer's one idle timeout covers that reply too, and a relay that scans the message first
        // answered after the 60 s this was — the message taken and queued by the relay, the attempt counted as
        // failed, and the report mailed again by the next attempt.
        socketTimeout: SMTP_REPLY_TIMEOUT_MS,
      }),
    }
  }
  return { kind: 'outbox', transporter: nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' }) }
}
