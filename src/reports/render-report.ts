import type { DailyReport } from './build-report.ts'
import { csvAttachment, type CsvAttachment } from './csv-attachment.ts'
import { renderCsv } from './csv-export.ts'
import { subjectFor } from './format.ts'
import { renderHtml } from './html-render.ts'
import { renderText } from './text-render.ts'

export interface RenderedReport {
  subject: string
  html: string
  text: string
  /** The conversations CSV, BOM included. */
  csv: string
  /** Suggested attachment file name. */
  csvFilename: string
  /** What the report mail attaches: `csv` as it is, or zipped past PLAIN_CSV_MAX_BYTES (src/reports/csv-attachment.ts). */
  attachment: CsvAttachment
}

export function renderDailyReport(report: DailyReport): RenderedReport {
  const csv = renderCsv(report)
  const csvFilename = `conversations-${report.date}.csv`
  const attachment = csvAttachment(csv, csvFilename, report.generatedAt)
  return {
    subject: subjectFor(report.date, report.timezone),
    html: renderHtml(report, attachment),
    text: renderText(report, attachment),
    csv,
    csvFilename,
    attachment,
  }
}
