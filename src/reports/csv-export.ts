import type { DailyReport } from './build-report.ts'
import { createLocalTimeFormatter } from './day-range.ts'
import { csvCell } from './csv-cell.ts'
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
  // The header (a BOM first) and each row joined by hand from quoted cells (see csvCell: a results key with a line
  // break in it stays one cell), in chunks so no 13 MB of row arrays is ever alive at once.
  const parts: string[] = [`\uFEFF${header.map((h) => csvCell(neutraliseCell(h))).join(',')}\r\n`]
  const CHUNK = 5000
  const rec: string[] = new Array<string>(header.length)
  for (let start = 0; start < report.conversations.length; start += CHUNK) {
    const lines: string[] = []
    const end = Math.min(report.conversations.length, start + CHUNK)
    for (let n = start; n < end; n++) {
      const c = report.conversations[n]!
      rec[0] = c.conversation_id
      rec[1] = String(c.agent_id)
      rec[2] = c.campaign
      rec[3] = c.contact_number ?? ''
      rec[4] = c.status
      rec[5] = c.duration_seconds === null ? '' : String(c.duration_seconds)
      rec[6] = time(c.started_at)
      rec[7] = time(c.ended_at)
      rec[8] = c.failure_reason ?? ''
      rec[9] = c.trace_id ?? ''
      rec[10] = c.call_recipe ?? ''
      rec[11] = c.previous_conversation_id ?? ''
      rec.fill('', CSV_COLUMNS.length)
      for (const [k, v] of c.resultEntries) rec[keyIndex.get(k)!] = v
      for (let i = 0; i < rec.length; i++) rec[i] = csvCell(neutraliseCell(rec[i]!))
      lines.push(rec.join(','))
    }
    if (lines.length) parts.push(lines.join('\r\n') + '\r\n')
  }
  return parts.join('')
}
