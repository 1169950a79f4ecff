import type { Runtime } from '../runtime.ts'
import { deleteInChunks, purgeRun, PURGE_EVERY_MS, PURGE_LEASE_MS, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { acquireLease, releaseLease } from '../coordination/lease.ts'
import { yieldToReceiver } from '../coordination/receiver-load.ts'
import { every } from '../utils/every.ts'
import { contactKey } from './contact-key.ts'
import { CONTACT_COLUMNS, unfilledKey } from './contact-lookup.ts'
import { sql } from 'kysely'

export interface ContactKeyFill {
  /** Conversations given their `contact_key`. */
  conversations: number
  /** Calls given their `customer_key`. */
  calls: number
  /** Stopped at the run's deadline or the service's stop, with rows still to fill (the next run goes on). */
  more: boolean
  /** Another replica was filling (a lease). */
  skipped: boolean
}

/**
 * Gives the rows without one their contact key (src/campaigns/contact-key.ts): the rows from before 0.27.0 after an
 * upgrade, and those an older version running beside this one writes. One replica at a time (a lease), in chunks sized
 * and paced as the retention purges' (src/db/delete-in-chunks.ts), each chunk one UPDATE for the rows of a few hundred
 * numbers. Until a row has its key, the follow-up planner finds it by its number as written.
 */
export async function fillContactKeys(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<ContactKeyFill> {
  const lease = 'contact-keys:fill'
  if (!(await acquireLease(rt, lease, PURGE_LEASE_MS))) return { conversations: 0, calls: 0, more: false, skipped: true }
  try {
    const chunks = purgeRun({ beforeChunk: () => yieldToReceiver(rt), ...options })
    // The ledger first: a contact's calls are most of what the attempt cap counts.
    const calls = await fillTable(rt, 'calls', chunks)
    const conversations = await fillTable(rt, 'conversations', chunks)
    const counts = { conversations: conversations.rows, calls: calls.rows, more: conversations.more || calls.more }
    if (counts.conversations + counts.calls > 0) rt.log.info(counts, 'filled contact keys of earlier rows (the follow-up planner finds a contact\'s history by them)')
    return { ...counts, skipped: false }
  } finally {
    await releaseLease(rt, lease)
  }
}

/**
 * One table's rows without a key, a chunk at a time in key order: the numbers of the next `limit` such rows, then one
 * UPDATE for all the rows of those numbers, joined through the number's index. The walk goes by the primary key from
 * where the last chunk ended: Postgres read the unfilled rows from the table's start, past every row filled so far, and
 * SQLite's UPDATE searched the key's index for its nulls — all the rows, for each chunk. A statement a number cost a
 * round trip each (~70 rows a second on Postgres at the purges' pace). Rows left without a key behind the walk (an
 * older version writing meanwhile) are the next run's.
 */
async function fillTable(rt: Runtime, table: keyof typeof CONTACT_COLUMNS, chunks: DeleteInChunksOptions): Promise<{ rows: number; more: boolean }> {
  const { id, key, written } = CONTACT_COLUMNS[table]
  const { dialect, db } = rt.store
  const country = rt.config.defaultCountry
  let rows = 0
  let after = ''
  const done = await deleteInChunks(async (limit) => {
    const unfilled = await sql<{ id: string; number: string }>`
      select ${sql.ref(id)} as id, ${sql.ref(written)} as number from ${sql.table(table)}
      where ${sql.ref(id)} > ${after} and ${unfilledKey(dialect, key)} and ${sql.ref(written)} is not null
      order by ${sql.ref(id)} limit ${limit}`.execute(db)
    if (unfilled.rows.length === 0) return 0
    after = unfilled.rows[unfilled.rows.length - 1]!.id
    const numbers = [...new Set(unfilled.rows.map((r) => r.number))]
    const keys = numbers.map((n) => contactKey(n, country))
    const pairs =
      dialect === 'sqlite'
        ? sql`(select json_extract(value, '$[0]') as number, json_extract(value, '$[1]') as contact from json_each(${JSON.stringify(numbers.map((n, i) => [n, keys[i]]))}))`
        : sql`(select * from unnest(${numbers}::text[], ${keys}::text[]) as p(number, contact))`
    const filled = await sql`
      update ${sql.table(table)} set ${sql.ref(key)} = v.contact from ${pairs} as v
      where ${unfilledKey(dialect, `${table}.${key}`)} and ${sql.ref(`${table}.${written}`)} = v.number`.execute(db)
    rows += Number(filled.numAffectedRows ?? 0)
    return unfilled.rows.length
  }, chunks)
  return { rows, more: done.more }
}

/** Fills contact keys shortly after start-up, then every PURGE_EVERY_MS (rows an older version beside this one writes). */
export function startContactKeyFill(rt: Runtime): () => Promise<void> {
  return every(rt.clock, rt.log, 'contact key fill', 5_000, PURGE_EVERY_MS, (signal) => fillContactKeys(rt, { signal }))
}
