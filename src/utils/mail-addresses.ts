import { domainToASCII } from 'node:url'
import addressparser from 'nodemailer/lib/addressparser'

/** One recipient: its address, and the display name it was given (empty when none). */
export interface Mailbox {
  name: string
  address: string
}

/**
 * Parses address lists (`a@x, "Doe, John" <j@y>`, or several of them) into mailboxes. A comma inside a
 * quoted display name is part of the name, not a separator; groups (`team: a@x, b@y;`) are flattened.
 */
export function parseMailboxes(input: string | readonly string[]): Mailbox[] {
  const lists = typeof input === 'string' ? [input] : input
  return lists.flatMap((list) => addressparser(list, { flatten: true })).flatMap((m) => {
    const address = m.address.trim()
    const name = m.name.trim()
    if (address) return [{ name, address }]
    // Text without an address (`ops`) is kept as typed, for the relay to refuse with its reason, rather
    // than dropped without a word.
    return name ? [{ name: '', address: name }] : []
  })
}

/** A mailbox as one header-ready string: `j@y`, or `"Doe, John" <j@y>` with a name. */
export function formatMailbox(mailbox: Mailbox): string {
  if (!mailbox.name) return mailbox.address
  return `"${mailbox.name.replace(/["\\]/g, '\\$&')}" <${mailbox.address}>`
}

/** Address lists as one string per recipient (what mail_log.recipients stores, joined by ", "). */
export function parseRecipients(input: string | readonly string[]): string[] {
  return parseMailboxes(input).map(formatMailbox)
}

/**
 * The same address: envelope addresses compare without case (relays answer for `Ops@X` as `ops@x`), and an
 * internationalised domain as its ASCII form (nodemailer reports `ops@bücher.example` refused as `ops@xn--bcher-kva.example`).
 */
export function sameAddress(a: string, b: string): boolean {
  return addressKey(a) === addressKey(b)
}

/** An address as `sameAddress` compares it: lower case, the domain in its ASCII form. */
export function addressKey(address: string): string {
  const at = address.lastIndexOf('@')
  if (at < 0) return address.toLowerCase()
  const domain = address.slice(at + 1)
  return `${address.slice(0, at)}@${domainToASCII(domain) || domain}`.toLowerCase()
}
