import type { ReportRow } from './day-rows.ts'

/**
 * The figures of a set of conversations. Definitions (also in the README):
 * - connected: the call reached the callee — `completed`, or `socket_failure` (the line was answered and the
 *   media connection dropped afterwards);
 * - connect rate = connected / calls, success rate = completed / calls, as percentages to one decimal;
 * - average duration: over connected calls that report a duration;
 * - calls still ringing or in progress count in `calls` (and in `in_progress`) but are neither.
 */
export const CONNECTED_STATUSES: readonly string[] = ['completed', 'socket_failure']

export interface CountItem {
  value: string
  count: number
}

export interface ResultsBreakdown {
  /** The results key, e.g. "intent". */
  key: string
  /** Conversations that reported this key. */
  reported: number
  values: CountItem[]
  /** Distinct values beyond those listed. */
  otherValues: number
  otherCount: number
}

export interface Figures {
  calls: number
  completed: number
  connected: number
  /** Status → count, largest first. */
  byStatus: CountItem[]
  /** Percent to one decimal; null when there were no calls. */
  connectRate: number | null
  successRate: number | null
  /** Seconds to one decimal, over connected calls with a duration; null when none. */
  avgDurationSeconds: number | null
  /** Most frequent failure reasons of calls that did not complete. */
  failureReasons: CountItem[]
  failureReasonsOther: number
  /** The most reported results keys, each broken down by value. */
  results: ResultsBreakdown[]
  /** Results keys reported but not among `results` (the attached CSV has a column for every one). */
  resultKeysOther: number
}

/**
 * Percentage to one decimal, half up, or null for an empty denominator. From the exact quotient: (part / whole) * 1000
 * rounds 203 of 400 to 507.4999… (50.7 %), where part * 1000 / whole is 507.5 (50.8 %).
 */
export function rate(part: number, whole: number): number | null {
  return whole > 0 ? Math.round((part * 1000) / whole) / 10 : null
}

function top(map: Map<string, number>, n: number): { items: CountItem[]; otherValues: number; otherCount: number } {
  const sorted = [...map].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || a.value.localeCompare(b.value))
  const items = sorted.slice(0, n)
  const rest = sorted.slice(n)
  return { items, otherValues: rest.length, otherCount: rest.reduce((s, r) => s + r.count, 0) }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}

const RESULT_KEYS_SHOWN = 5
const RESULT_VALUES_SHOWN = 6
const FAILURE_REASONS_SHOWN = 5

/** Parses the stored results JSON into its scalar entries (objects and arrays are not broken down). */
export function scalarResults(json: string | null): Array<[string, string]> {
  if (!json) return []
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return []
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return []
  const out: Array<[string, string]> = []
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out.push([k, String(v)])
  }
  return out
}

/** Accumulates rows one at a time, so per-agent and per-campaign figures come from one pass. */
export interface FiguresAccumulator {
  add(row: ReportRow, results: Array<[string, string]>): void
  finish(): Figures
}

export function createFiguresAccumulator(): FiguresAccumulator {
  let calls = 0
  let completed = 0
  let connected = 0
  let durationSum = 0
  let durationCount = 0
  const statuses = new Map<string, number>()
  const reasons = new Map<string, number>()
  const results = new Map<string, Map<string, number>>()
  const reported = new Map<string, number>()
  return {
    add(row, rowResults) {
      calls++
      bump(statuses, row.status)
      if (row.status === 'completed') completed++
      if (CONNECTED_STATUSES.includes(row.status)) {
        connected++
        if (row.duration_seconds !== null && row.duration_seconds !== undefined) {
          durationSum += Number(row.duration_seconds)
          durationCount++
        }
      }
      if (row.status !== 'completed' && row.failure_reason) bump(reasons, row.failure_reason)
      for (const [k, v] of rowResults) {
        let values = results.get(k)
        if (!values) results.set(k, (values = new Map()))
        bump(values, v)
        bump(reported, k)
      }
    },
    finish() {
      const reasonTop = top(reasons, FAILURE_REASONS_SHOWN)
      const keyTop = top(reported, RESULT_KEYS_SHOWN)
      const keys = keyTop.items
      return {
        calls,
        completed,
        connected,
        byStatus: top(statuses, Number.MAX_SAFE_INTEGER).items,
        connectRate: rate(connected, calls),
        successRate: rate(completed, calls),
        avgDurationSeconds: durationCount ? Math.round((durationSum / durationCount) * 10) / 10 : null,
        failureReasons: reasonTop.items,
        failureReasonsOther: reasonTop.otherCount,
        results: keys.map(({ value: key, count }) => {
          const t = top(results.get(key) ?? new Map(), RESULT_VALUES_SHOWN)
          return { key, reported: count, values: t.items, otherValues: t.otherValues, otherCount: t.otherCount }
        }),
        resultKeysOther: keyTop.otherValues,
      }
    },
  }
}

/** Figures of rows in one go (rows with already-parsed results). */
export function computeFigures(rows: Array<{ row: ReportRow; results: Array<[string, string]> }>): Figures {
  const acc = createFiguresAccumulator()
  for (const r of rows) acc.add(r.row, r.results)
  return acc.finish()
}
