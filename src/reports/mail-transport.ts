import nodemailer, { type Transporter } from 'nodemailer'
import type { Config } from '../config/load.ts'

export type MailTransportKind = 'smtp' | 'outbox'

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
        // Fail an attempt in seconds, not nodemailer's minutes: retries are ours.
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 60_000,
      }),
    }
  }
  return { kind: 'outbox', transporter: nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' }) }
}
