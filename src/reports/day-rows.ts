import type { Runtime } from '../runtime.ts'
import type { DayRange } from './day-range.ts'
import { withLargeReadCache } from '../db/read-cache.ts'

/** A conversation of the day with what the calls ledger knows about it. */
export interface ReportRow {
  conversation_id: string
  agent_id: number
  contact_number: string | null
  status: string
  duration_seconds: number | null
  started_at: number | null
  ended_at: number | null
  failure_reason: string | null
  trace_id: string | null
  /** JSON text as stored. */
  results: string | null
  call_parameters: string | null
  created_at: number
  /** From the matching `calls` row (by trace id), when switchboard placed the call. */
  call_recipe: string | null
  call_campaign: string | null
  previous_conversation_id: string | null
}

/**
 * Which day a conversation belongs to: the day it ended, or — while it has not ended — the day switchboard
 * first recorded it. Both branches use an index-friendly range on one column.
 */
export async function loadDayRows(rt: Runtime, range: Pick<DayRange, 'startMs' | 'endMs'>): Promise<ReportRow[]> {
  const { startMs, endMs } = range
  const query = rt.store.db
    .selectFrom('conversations as c')
    .leftJoin('calls as k', 'k.trace_id', 'c.trace_id')
    .select([
      'c.conversation_id', 'c.agent_id', 'c.contact_number', 'c.status', 'c.duration_seconds', 'c.started_at',
      'c.ended_at', 'c.failure_reason', 'c.trace_id', 'c.results', 'c.call_parameters', 'c.created_at',
      'k.recipe as call_recipe', 'k.campaign as call_campaign', 'k.previous_conversation_id',
    ])
    .where((eb) =>
      eb.or([
        eb.and([eb('c.ended_at', '>=', startMs), eb('c.ended_at', '<', endMs)]),
        eb.and([eb('c.ended_at', 'is', null), eb('c.created_at', '>=', startMs), eb('c.created_at', '<', endMs)]),
      ]),
    )
  // Read through the ended_at index, the table's pages in no particular order: with a page cache that holds
  // them, each page is read from the file once (src/db/read-cache.ts).
  const rows = await withLargeReadCache(rt.store, () => query.execute())
  // Sorted here rather than in SQL: a 100,000-row sort in SQLite's temp b-tree costs more than in JS, and
  // both dialects then agree on where unfinished calls go (NULLS FIRST vs LAST differ).
  const at = (r: (typeof rows)[number]) => r.ended_at ?? r.created_at
  rows.sort((a, b) => at(a) - at(b) || (a.conversation_id < b.conversation_id ? -1 : a.conversation_id > b.conversation_id ? 1 : 0))
  // A trace id may (in theory) appear on two ledger rows; one conversation is still one row.
  const seen = new Set<string>()
  const out: ReportRow[] = []
  for (const r of rows) {
    if (seen.has(r.conversation_id)) continue
    seen.add(r.conversation_id)
    // pg returns BIGINT as numbers here already (see db/connect.ts); SQLite too. Normalise the joined nulls.
    r.call_recipe ??= null
    r.call_campaign ??= null
    r.previous_conversation_id ??= null
    out.push(r as ReportRow)
  }
  return out
}
