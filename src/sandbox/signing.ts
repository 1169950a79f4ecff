import { createHmac } from 'node:crypto'

/** `sha256=` + lowercase hex HMAC-SHA256 of the raw body, keyed by the secret as UTF-8 (provider-notes). */
export function signWebhookBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body, 'utf8').digest('hex')}`
}
