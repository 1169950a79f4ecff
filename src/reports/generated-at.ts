import { createLocalTimeFormatter } from './day-range.ts'
import type { DailyReport } from './build-report.ts'

/**
 * When the report was made, in the zone its day is counted in, with the offset and the zone's name
 * (`2026-11-21T08:00:00+05:30 (Asia/Kolkata)`): in UTC it read as another hour, and before the zone's own midnight
 * in UTC, another day. Both parts of the mail say it.
 */
export function generatedAt(report: Pick<DailyReport, 'timezone' | 'generatedAt'>): string {
  return `${createLocalTimeFormatter(report.timezone)(report.generatedAt)} (${report.timezone})`
}
