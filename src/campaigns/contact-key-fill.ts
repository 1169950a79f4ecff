import type { Runtime } from '../runtime.ts'
import { deleteInChunks, purgeRun, PURGE_EVERY_MS, PURGE_LEASE_MS, type DeleteInChunksOptions } from '../db/delete-in-chunks.ts'
import { acquireLease, releaseLease } from '../coordination/lease.ts'
import { yieldToReceiver } from '../coordination/receiver-load.ts'
import { every } from '../utils/every.ts'
import { contactKey } from './contact-key.ts'

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
    const db = rt.store.db
    const country = rt.config.defaultCountry
    const chunks = purgeRun({ beforeChunk: () => yieldToReceiver(rt), ...options })
    let conversations = 0
    let calls = 0
    const talked = await deleteInChunks(async (limit) => {
      const numbers = await db.selectFrom('conversations').select('contact_number').distinct().where('contact_key', 'is', null).where('contact_number', 'is not', null).limit(limit).execute()
      await db.transaction().execute(async (trx) => {
        for (const { contact_number } of numbers) {
          const done = await trx.updateTable('conversations').set({ contact_key: contactKey(contact_number, country) }).where('contact_key', 'is', null).where('contact_number', '=', contact_number).executeTakeFirst()
          conversations += Number(done.numUpdatedRows)
        }
      })
      return numbers.length
    }, chunks)
    const placed = await deleteInChunks(async (limit) => {
      const numbers = await db.selectFrom('calls').select('customer_phone').distinct().where('customer_key', 'is', null).limit(limit).execute()
      await db.transaction().execute(async (trx) => {
        for (const { customer_phone } of numbers) {
          const done = await trx.updateTable('calls').set({ customer_key: contactKey(customer_phone, country) }).where('customer_key', 'is', null).where('customer_phone', '=', customer_phone).executeTakeFirst()
          calls += Number(done.numUpdatedRows)
        }
      })
      return numbers.length
    }, chunks)
    const more = talked.more || placed.more
    if (conversations + calls > 0) rt.log.info({ conversations, calls, more }, 'filled contact keys of earlier rows (the follow-up planner finds a contact\'s history by them)')
    return { conversations, calls, more, skipped: false }
  } finally {
    await releaseLease(rt, lease)
  }
}

/** Fills contact keys shortly after start-up, then every PURGE_EVERY_MS (rows an older version beside this one writes). */
export function startContactKeyFill(rt: Runtime): () => Promise<void> {
  return every(rt.clock, rt.log, 'contact key fill', 5_000, PURGE_EVERY_MS, (signal) => fillContactKeys(rt, { signal }))
}
