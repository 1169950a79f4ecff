import nodemailer from 'nodemailer'

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

export interface ComposedMail {
  /** The RFC 822 bytes, exactly as they will be delivered (and retried). */
  raw: Buffer
  messageId: string | undefined
}

const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' })

/**
 * Builds the message once. The bytes are what the outbox stores and every attempt delivers, so a retry
 * sends the same message (same Message-ID, same Date) rather than a rebuilt one.
 */
export async function composeMail(from: string, to: string[], message: MailMessage, dateMs: number): Promise<ComposedMail> {
  const info = await composer.sendMail({
    from,
    to,
    subject: message.subject,
    text: message.text,
    html: message.html,
    attachments: message.attachments,
    date: new Date(dateMs),
  })
  return { raw: info.message as Buffer, messageId: typeof info.messageId === 'string' ? info.messageId : undefined }
}
