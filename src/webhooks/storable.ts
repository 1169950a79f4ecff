import { pathOfString } from '../utils/path-of-string.ts'

/**
 * What the inbox can store, checked before the commit so a bad body is a 400 with its reason (the
 * provider stops retrying it) instead of a database error reported as an outage (503, retried for
 * minutes) that also fails every valid event sharing its group commit.
 *
 * - U+0000 anywhere in the body: Postgres text cannot hold it (SQLite can), and the body's fields become
 *   columns (ids, type, status, phone numbers, failure reasons). Refused on both dialects alike.
 * - Id lengths: event id, type, conversation id and trace id are keys or indexed columns; the limits are
 *   far above anything the provider sends (ids are UUID-sized) and keep index entries small.
 * - Ids that are not well-formed text: JSON can carry half of a UTF-16 surrogate pair (`"\ud800"`), which no
 *   database stores as it came — SQLite kept its bytes and gave back three U+FFFD, so the event's outcome, written by
 *   the id read back, never matched its row and it stayed pending forever; a conversation id read back that way
 *   failed the read model. And an event id of `.` or `..` is a path segment every URL drops (its event page, its
 *   replay — `POST /ui/events/./replay` reached "replay all matching").
 */
export const MAX_EVENT_ID_LENGTH = 255
export const MAX_EVENT_TYPE_LENGTH = 100
export { MAX_CONVERSATION_ID_LENGTH, MAX_TRACE_ID_LENGTH } from '../upstream/id-limits.ts'

/** Why a parsed JSON body cannot be stored as its text says, and where: a string holding U+0000, or half of a surrogate pair. */
export interface UnstorableText {
  problem: 'nul' | 'lone_surrogate'
  /** The field, as `data.results.intent` or `a field name in data.call` (src/utils/path-of-string.ts). */
  at: string
}

/**
 * The first string in the parsed JSON (a key or a value) that no database stores as it is: U+0000 (Postgres text cannot
 * hold it), or half of a UTF-16 surrogate pair (`"\ud800"`: Postgres' json type refuses the escape, so one such body
 * made every event listing that reached it answer 500 on Postgres for as long as it was kept). Undefined for nearly
 * every body at the cost of one `includes`: JSON carries either only as a `\u` escape (a raw NUL byte is invalid JSON,
 * and an encoded surrogate is invalid UTF-8, refused before this). The same walk as POST /v1/call's; call it after the
 * nesting check (MAX_JSON_DEPTH), which bounds its recursion.
 */
export function unstorableText(rawJson: string, parsed: unknown): UnstorableText | undefined {
  if (!rawJson.includes('\\u')) return undefined
  // "\\u0000" (an escaped backslash) and a whole pair also match these, which is why the walk decides.
  const nul = rawJson.includes('\\u0000') ? pathOfString(parsed, (text) => text.includes('\u0000')) : undefined
  if (nul !== undefined) return { problem: 'nul', at: nul }
  const half = /\\u[dD][89a-fA-F]/.test(rawJson) ? pathOfString(parsed, (text) => !text.isWellFormed()) : undefined
  return half === undefined ? undefined : { problem: 'lone_surrogate', at: half }
}

export type IdCheck = { ok: true; value: string } | { ok: false; problem: 'missing' | 'too_long' | 'imprecise' | 'malformed' }

/**
 * An id from the body or a header: a non-blank string, or a whole number JSON carries exactly (below 2^53), of at
 * most `max` characters, well-formed (no half of a surrogate pair). A larger number has already lost digits (1234567890123456789 reads as …800): two events
 * would share an id, so it is refused rather than stored as the other's duplicate.
 */
export function checkId(value: unknown, max: number): IdCheck {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { ok: true, value: String(value) } : { ok: false, problem: 'imprecise' }
  if (typeof value !== 'string' || value.trim() === '') return { ok: false, problem: 'missing' }
  if (value.length > max) return { ok: false, problem: 'too_long' }
  if (!value.isWellFormed()) return { ok: false, problem: 'malformed' }
  return { ok: true, value }
}

/** An id no URL can name: `.` and `..` are path segments that URL parsing removes. */
export function isDotSegment(id: string): boolean {
  return id === '.' || id === '..'
}
