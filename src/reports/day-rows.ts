import type { Runtime } from '../runtime.ts'
import type { DayRange } from './day-range.ts'
import { whileBusy } from '../db/busy-wait.ts'
import { withLargeReadCache } from '../db/read-cache.ts'
import { shortSql } from '../db/short-sql.ts'
import { dayInstant, inDay } from './day-of-conversation.ts'

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
  /** The instant that files it under its day (`dayInstant`): when it ended, or what stands in for that. */
  day_at: number
}

/** The columns read, in the order SQLite's rows come back as arrays (`rowOf` below reads them by position). */
const COLUMNS = [
  'c.conversation_id', 'c.agent_id', 'c.contact_number', 'c.status', 'c.duration_seconds', 'c.started_at',
  'c.ended_at', 'c.failure_reason', 'c.trace_id', 'c.results', 'c.call_parameters', 'c.created_at',
  'k.recipe as call_recipe', 'k.campaign as call_campaign', 'k.previous_conversation_id',
] as const

/** A row as an object literal: one shape for all 100,000, built here rather than by the driver. */
function rowOf(r: unknown[]): ReportRow {
  return {
    conversation_id: r[0] as string,
    agent_id: r[1] as number,
    contact_number: r[2] as string | null,
    status: r[3] as string,
    duration_seconds: r[4] as number | null,
    started_at: r[5] as number | null,
    ended_at: r[6] as number | null,
    failure_reason: r[7] as string | null,
    trace_id: r[8] as string | null,
    results: r[9] as string | null,
    call_parameters: r[10] as string | null,
    created_at: r[11] as number,
    call_recipe: (r[12] as string | null) ?? null,
    call_campaign: (r[13] as string | null) ?? null,
    previous_conversation_id: (r[14] as string | null) ?? null,
    day_at: Number(r[15]),
  }
}
const NAMES = [...COLUMNS.map((c) => c.split(' as ').at(-1)!.replace(/^[ck]\./, '')), 'day_at']

/** The conversations of a day, by the day each belongs to (`dayInstant`: the day it ended, or what stands in for that). */
export async function loadDayRows(rt: Runtime, range: Pick<DayRange, 'startMs' | 'endMs'>): Promise<ReportRow[]> {
  const { startMs, endMs } = range
  const query = rt.store.db
    .selectFrom('conversations as c')
    .leftJoin('calls as k', 'k.trace_id', 'c.trace_id')
    .select(COLUMNS)
    .select(dayInstant('c.').as('day_at'))
    .where(inDay('c.', startMs, endMs))
  const sqlite = rt.store.sqlite
  // Read through the ended_at index, the table's pages in no particular order: with a page cache that holds
  // them, each page is read from the file once (src/db/read-cache.ts). On SQLite the rows come back as arrays:
  // better-sqlite3 builds an object per row property by property, ~0.6 s for a day of 100,000 against ~0.4 s for
  // arrays, which become objects of one shape here for ~0.1 s more (and read faster after).
  // Postgres likewise: node-pg builds each row object column by column (and kysely then copied it), the larger part of
  // reading a day there.
  const compiled = query.compile()
  const started = performance.now()
  const rows: ReportRow[] = await withLargeReadCache(rt.store, async () => {
    let names: string[]
    let arrays: unknown[][]
    if (sqlite) {
      const statement = sqlite.prepare(compiled.sql).raw(true)
      names = statement.columns().map((c) => c.name)
      arrays = whileBusy(() => statement.all(...compiled.parameters)) as unknown[][]
    } else {
      const result = await rt.store.pool!.query<unknown[]>({ text: compiled.sql, values: [...compiled.parameters], rowMode: 'array' })
      names = result.fields.map((f) => f.name)
      arrays = result.rows
    }
    if (names.join() !== NAMES.join()) throw new Error(`the day's rows came back as ${names.join(', ')}, not ${NAMES.join(', ')}`)
    return arrays.map(rowOf)
  })
  // Read beside kysely (raw arrays), so its slow-statement log does not see this, the service's largest read: said here.
  const tookMs = performance.now() - started
  if (rt.config.slowStatementMs > 0 && tookMs >= rt.config.slowStatementMs) {
    rt.log.warn({ duration_ms: Math.round(tookMs), sql: shortSql(compiled.sql) }, 'slow database statement')
  }
  // Sorted here rather than in SQL: a 100,000-row sort in SQLite's temp b-tree costs more than in JS, and
  // both dialects then agree on where unfinished calls go (NULLS FIRST vs LAST differ).
  rows.sort((a, b) => a.day_at - b.day_at || (a.conversation_id < b.conversation_id ? -1 : a.conversation_id > b.conversation_id ? 1 : 0))
  // A trace id may (in theory) appear on two ledger rows; one conversation is still one row.
  const seen = new Set<string>()
  const out: ReportRow[] = []
  for (const r of rows) {
    if (seen.has(r.conversation_id)) continue
    seen.add(r.conversation_id)
    out.push(r)
  }
  return out
}
