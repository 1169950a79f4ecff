import type { Transaction } from 'kysely'
import { previousInChain } from '../campaigns/conversation-chain.ts'
import type { Database } from '../db/schema.ts'
import { DEAD_CALL_STATUSES } from '../campaigns/plan-follow-ups.ts'

/** What of a conversation just stored this needs. */
interface NewConversation {
  conversation_id: string
  trace_id: string | null
  contact_key: string | null
}

/**
 * Gives a follow-up whose answer was lost its trace id, once its conversation arrives. Such a call is in the ledger
 * without one (the provider answered `duplicate_request` to the resend: placed, but its answer never came), so nothing
 * joined it to its outcome: `calls list` showed none, and the report counted the follow-up `initiated` for ever, its
 * completion never. A new conversation that continues another (`…_2` after `…_1`) is that call's when the ledger has a
 * live call continuing the same conversation with no trace id, to the same contact, and no row holds the new trace id.
 *
 * One read per batch of new conversations, and nothing more when no such call waits (as a rule); runs in the read
 * model's transaction, so the link and the conversation are stored together.
 */
export async function adoptLostAnswers(trx: Transaction<Database>, stored: Iterable<NewConversation>): Promise<void> {
  const byPrevious = new Map<string, NewConversation>()
  for (const row of stored) {
    const previous = row.trace_id ? previousInChain(row.conversation_id) : undefined
    if (previous) byPrevious.set(previous, row)
  }
  if (byPrevious.size === 0) return
  const waiting = await trx
    .selectFrom('calls')
    .select(['id', 'previous_conversation_id', 'customer_key', 'created_at'])
    .where('previous_conversation_id', 'in', [...byPrevious.keys()])
    .where('trace_id', 'is', null)
    .where('status', 'not in', [...DEAD_CALL_STATUSES])
    .orderBy('created_at', 'desc')
    .execute()
  if (waiting.length === 0) return
  const traces = [...new Set(waiting.map((w) => byPrevious.get(w.previous_conversation_id!)!.trace_id!))]
  const known = new Set((await trx.selectFrom('calls').select('trace_id').where('trace_id', 'in', traces).execute()).map((r) => r.trace_id))
  const adopted = new Set<string>()
  for (const call of waiting) {
    const conversation = byPrevious.get(call.previous_conversation_id!)!
    const trace = conversation.trace_id!
    // The newest such call of each conversation; another contact's (a key of its own) is not this one.
    if (known.has(trace) || adopted.has(trace)) continue
    if (call.customer_key !== null && conversation.contact_key !== null && call.customer_key !== conversation.contact_key) continue
    await trx.updateTable('calls').set({ trace_id: trace }).where('id', '=', call.id).where('trace_id', 'is', null).execute()
    adopted.add(trace)
  }
}
