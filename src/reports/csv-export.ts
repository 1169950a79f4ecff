import { stringify } from 'csv-stringify/sync'
import type { DailyReport } from './build-report.ts'
import { createLocalTimeFormatter } from './day-range.ts'
import { neutraliseCell } from './neutralise.ts'

/** The fixed columns of the conversations CSV; each scalar results key follows as `result.<key>`. */
export const CSV_COLUMNS = [
  'conversation_id', 'agent_id', 'campaign', 'contact_number', 'status', 'duration_seconds', 'started_at', 'ended_at',
  'failure_reason', 'trace_id', 'recipe', 'previous_conversation_id',
] as const

/**
 * The day's conversations as CSV: UTF-8 with a BOM (so Excel reads accents and scripts right), CRLF, times
 * in the report's zone with their offset, and every cell neutralised against formula injection.
 */
export function renderCsv(report: DailyReport): string {
  const resultKeys = new Set<string>()
  for (const c of report.conversations) for (const [k] of c.resultEntries) resultKeys.add(k)
  const keys = [...resultKeys].sort()
  const time = createLocalTimeFormatter(report.timezone)
  const header = [...CSV_COLUMNS, ...keys.map((k) => `result.${k}`)]
  const keyIndex = new Map(keys.map((k, i) => [k, CSV_COLUMNS.length + i]))
  // Stringified in chunks: short-lived record arrays die young instead of 100,000 of them reaching the old
  // generation (less work for the garbage collector on a big day).
  const parts: string[] = [stringify([header.map(neutraliseCell)], { bom: true, record_delimiter: 'windows' })]
  const CHUNK = 5000
  for (let start = 0; start < report.conversations.length; start += CHUNK) {
    const records: string[][] = []
    const end = Math.min(report.conversations.length, start + CHUNK)
    for (let n = start; n < end; n++) {
      const c = report.conversations[n]!
      const rec: string[] = [
        c.conversation_id,
        String(c.agent_id),
        c.campaign,
        c.contact_number ?? '',
        c.status,
        c.duration_seconds === null ? '' : String(c.duration_seconds),
        time(c.started_at),
        time(c.ended_at),
        c.failure_reason ?? '',
        c.trace_id ?? '',
        c.call_recipe ?? '',
        c.previous_conversation_id ?? '',
      ]
      for (let i = 0; i < keys.length; i++) rec.push('')
      for (const [k, v] of c.resultEntries) rec[keyIndex.get(k)!] = v
      for (let i = 0; i < rec.length; i++) rec[i] = neutraliseCell(rec[i]!)
      records.push(rec)
    }
    parts.push(stringify(records, { record_delimiter: 'windows' }))
  }
  return parts.join('')
}
