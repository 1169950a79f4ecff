import { domainToASCII } from 'node:url'
import addressparser from 'nodemailer/lib/addressparser'
import { printable } from './printable.ts'

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

/**
 * An address list as a person types it, refused rather than guessed at: `a@x b@y` (two addresses, no comma) was
 * read as `"b@y" <a@x>`, and `a@x\r\nBcc: e@y` or `a@x Bcc: e@y` as `e@y` — the recipients meant were dropped or
 * replaced without a word. `entry` is the part at fault, as given; `hint` says what is wrong when that is known.
 */
export interface AddressRefusal {
  entry: string
  hint?: string
}

export type AddressList = { ok: true; mailboxes: Mailbox[] } | { ok: false; refusal: AddressRefusal }

// C0, DEL, C1, and the line and paragraph separators: none belongs in an address, and CR/LF start a new header.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
// An address with nothing around it: no space, quote, angle bracket, comma, semicolon, colon, parenthesis or bracket.
const ADDRESS = String.raw`[^\s"<>(),;:\\\[\]@]+@[^\s"<>(),;:\\\[\]@.][^\s"<>(),;:\\\[\]@]*`
const PLAIN = new RegExp(`^(${ADDRESS})$`)
// `Name <addr>` or `"Any, Name" <addr>`: a bare name holds none of the characters that would make it a group (`:`),
// a second address (`@`, `,`) or a comment.
const NAMED = new RegExp(String.raw`^(?:"((?:[^"\\]|\\.)*)"|([^"<>()\[\],;:@\\]+?))\s*<(${ADDRESS})>$`)

/**
 * Reads address lists strictly: entries separated by commas (spaces around them allowed; a comma inside a quoted
 * name is part of the name), each a plain address (`ops@example.com`) or a named one (`Ops <ops@example.com>`,
 * `"Doe, John" <j@example.com>`), and no control character anywhere. Anything else is refused with the entry at
 * fault. Empty entries (`a@x,`, `' , '`) name nobody and are skipped.
 */
export function readAddressList(input: string | readonly string[]): AddressList {
  const mailboxes: Mailbox[] = []
  for (const list of typeof input === 'string' ? [input] : input) {
    const entries = splitEntries(list)
    if (!entries.ok) return entries
    for (const raw of entries.entries) {
      const entry = raw.trim()
      if (entry === '') continue
      if (CONTROL.test(entry)) return refuse(entry, 'a control character (a line break, a tab…) is not allowed')
      const plain = PLAIN.exec(entry)
      if (plain) {
        mailboxes.push({ name: '', address: plain[1]! })
        continue
      }
      const named = NAMED.exec(entry)
      if (named) {
        const name = named[1] !== undefined ? named[1].replace(/\\(.)/g, '$1') : named[2]!
        mailboxes.push({ name: name.trim(), address: named[3]! })
        continue
      }
      const words = entry.split(/\s+/)
      if (words.length > 1 && words.every((w) => PLAIN.test(w))) return refuse(entry, 'put a comma between two addresses')
      return refuse(entry)
    }
  }
  return { ok: true, mailboxes }
}

function refuse(entry: string, hint?: string): { ok: false; refusal: AddressRefusal } {
  return { ok: false, refusal: hint === undefined ? { entry } : { entry, hint } }
}

/** A list split at its commas, except those inside a quoted name; a quote left open is refused. */
function splitEntries(list: string): { ok: true; entries: string[] } | { ok: false; refusal: AddressRefusal } {
  const entries: string[] = []
  let start = 0
  let quoted = false
  for (let i = 0; i < list.length; i++) {
    const c = list[i]
    if (quoted && c === '\\') i++
    else if (c === '"') quoted = !quoted
    else if (c === ',' && !quoted) {
      entries.push(list.slice(start, i))
      start = i + 1
    }
  }
  if (quoted) return refuse(list.slice(start).trim(), 'a quote is not closed')
  entries.push(list.slice(start))
  return { ok: true, entries }
}

/**
 * `readAddressList` for a setting or an argument: the recipients as header-ready strings, or an Error of one line
 * naming `what` and the entry at fault (control characters shown escaped).
 */
export function strictRecipients(input: string | readonly string[], what: string): string[] {
  const list = readAddressList(input)
  if (!list.ok) throw new Error(describeRefusal(what, 'must be email addresses, comma-separated', list.refusal))
  return list.mailboxes.map(formatMailbox)
}

/** `<what> <rule>[: <hint>] (got "<entry>")`, on one line whatever the entry holds. */
export function describeRefusal(what: string, rule: string, refusal: AddressRefusal): string {
  return `${what} ${rule}${refusal.hint ? `: ${refusal.hint}` : ''} (got "${printable(refusal.entry, 60)}")`
}
