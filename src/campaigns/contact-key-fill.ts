import type { Runtime } from '../runtime.ts'
import { deleteInChunks, purgeRun, PURGE_EVERY_MS, PURGE_LEASE_MS, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { acquireLease, releaseLease } from '../coordination/lease.ts'
import { yieldToReceiver } from '../coordination/receiver-load.ts'
import { every } from '../utils/every.ts'
import { contactKey } from './contact-key.ts'
import { CONTACT_COLUMNS } from './contact-lookup.ts'
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
 * and paced as the retention purges' (src/db/delete-in-chunks.ts), each chunk the rows of a few hundred numbers, one
 * UPDATE a number through its index. Until a row has its key, the follow-up planner finds it by its number as written.
 */
export async function fillContactKeys(rt: Runtime, options: DeleteInChunksOptions = {}): Promise<ContactKeyFill> {
  const lease = 'contact-keys:fill'
  if (!(await acquireLease(rt, lease, PURGE_LEASE_MS))) return { conversations: 0, calls: 0, more: false, skipped: true }
  try {
    const chunks = purgeRun({ beforeChunk: () => yieldToReceiver(rt), ...options })
    const conversations = await fillTable(rt, 'conversations', chunks)
    const calls = await fillTable(rt, 'calls', chunks)
    const counts = { conversations: conversations.rows, calls: calls.rows, more: conversations.more || calls.more }
    if (counts.conversations + counts.calls > 0) rt.log.info(counts, 'filled contact keys of earlier rows (the follow-up planner finds a contact\'s history by them)')
    return { ...counts, skipped: false }
  } finally {
    await releaseLease(rt, lease)
  }
}

/** One table's rows without a key, a few hundred numbers a chunk: one UPDATE a number, through its index. */
async function fillTable(rt: Runtime, table: keyof typeof CONTACT_COLUMNS, chunks: DeleteInChunksOptions): Promise<{ rows: number; more: boolean }> {
  const { key, written } = CONTACT_COLUMNS[table]
  const country = rt.config.defaultCountry
  let rows = 0
  const done = await deleteInChunks(async (limit) => {
    const unfilled = sql<{ number: string }>`select distinct ${sql.ref(written)} as number from ${sql.table(table)} where ${sql.ref(key)} is null and ${sql.ref(written)} is not null limit ${limit}`
    const numbers = (await unfilled.execute(rt.store.db)).rows
    await rt.store.db.transaction().execute(async (trx) => {
      for (const { number } of numbers) {
        const filled = await sql`update ${sql.table(table)} set ${sql.ref(key)} = ${contactKey(number, country)} where ${sql.ref(key)} is null and ${sql.ref(written)} = ${number}`.execute(trx)
        rows += Number(filled.numAffectedRows ?? 0)
      }
    })
    return numbers.length
  }, chunks)
  return { rows, more: done.more }
}

/** Fills contact keys shortly after start-up, then every PURGE_EVERY_MS (rows an older version beside this one writes). */
export function startContactKeyFill(rt: Runtime): () => Promise<void> {
  return every(rt.clock, rt.log, 'contact key fill', 5_000, PURGE_EVERY_MS, (signal) => fillContactKeys(rt, { signal }))
}
