import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely'
import type { Database } from '../db/schema.ts'

/**
 * `status`'s value that the conversation and trace indexes of `webhook_events` leave out (migration 0021): the indexes
 * hold only events that processing has taken up. The provider's ids are random, so each new entry of such an index
 * lands on a page of its own; kept out of the receiver's insert, that work is done by processing's outcome UPDATE,
 * off the webhook's durable commit (the receiver's insert with provider-shaped ids: ~50 → ~30 µs of CPU a row).
 * A literal, not a parameter, in every query: it names the partial index's condition for both planners.
 */
const UNINDEXED_STATUS = 'pending'

type EventsEb = ExpressionBuilder<Database, 'webhook_events'>

/**
 * Events matching any of `terms` — each a condition on `conversation_id` or `trace_id` — whatever their status: the
 * handled ones through the partial indexes (one index search per term, SQLite's MULTI-INDEX OR / Postgres's
 * BitmapOr), the pending ones (the backlog, normally small) through the status index, which carries both ids.
 */
export function keyedLookup(eb: EventsEb, terms: ReadonlyArray<Expression<SqlBool>>): Expression<SqlBool> {
  const handled = eb('status', '<>', sql.lit(UNINDEXED_STATUS))
  // `received_at >= 0` holds for every event: it makes the status index that carries both ids
  // (webhook_events_status_received_keys) the one that matches the most columns, so the pending events are searched in
  // that index, not fetched row by row through the due index.
  const pending = eb.and([eb('status', '=', sql.lit(UNINDEXED_STATUS)), eb('received_at', '>=', sql.lit(0))])
  return eb.or([...terms.map((term) => eb.and([term, handled])), eb.and([pending, terms.length === 1 ? terms[0]! : eb.or([...terms])])])
}
