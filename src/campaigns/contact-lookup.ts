import { sql, type RawBuilder, type SqlBool } from 'kysely'
import type { Dialect } from '../db/connect.ts'
import { inValues } from '../db/in-values.ts'
import { contactKey } from './contact-key.ts'

/** Where each table keeps a number as written and as its contact key (src/campaigns/contact-key.ts). */
export const CONTACT_COLUMNS = {
  conversations: { id: 'conversation_id', key: 'contact_key', written: 'contact_number' },
  calls: { id: 'id', key: 'customer_key', written: 'customer_phone' },
} as const

/** The numbers to look a contact up by: their keys, and as written for the rows an older version left without one. */
export interface ContactNumbers {
  keys: string[]
  written: string[]
}

/** The lookup values for `numbers` (each as given, or already a key with the number it was made from). */
export function contactNumbers(numbers: Iterable<{ number: string | null; key?: string | null }>, defaultCountry: string | undefined): ContactNumbers {
  const keys = new Set<string>()
  const written = new Set<string>()
  for (const { number, key: stored } of numbers) {
    const key = stored ?? contactKey(number, defaultCountry)
    if (key === null) continue
    keys.add(key)
    written.add(key)
    if (number !== null) written.add(number)
  }
  return { keys: [...keys], written: [...written] }
}

/**
 * The rows of `table` about these contacts, whatever way their number was written: by their key, or — for a row an
 * older version wrote, which the fill has not reached (src/campaigns/contact-key-fill.ts) — by the number as written.
 * On SQLite the second arm leaves the key's index alone (a unary `+`): it would otherwise search that index for its
 * nulls, every row at once after an upgrade until the fill is done, instead of the number's own. Postgres's planner
 * has the nulls' share in its statistics (and no unary `+` on text).
 */
export function contactIn(dialect: Dialect, table: keyof typeof CONTACT_COLUMNS, numbers: ContactNumbers): RawBuilder<SqlBool> {
  const { key, written } = CONTACT_COLUMNS[table]
  return sql<SqlBool>`(${inValues(dialect, key, numbers.keys)} or (${unfilledKey(dialect, key)} and ${inValues(dialect, written, numbers.written)}))`
}

/** `column is null`, on SQLite as a condition that leaves the column's index alone (a unary `+`; see contactIn). */
export function unfilledKey(dialect: Dialect, column: string): RawBuilder<SqlBool> {
  return dialect === 'sqlite' ? sql<SqlBool>`+${sql.ref(column)} is null` : sql<SqlBool>`${sql.ref(column)} is null`
}
