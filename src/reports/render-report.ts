import type { DailyReport } from './build-report.ts'
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
}

export function renderDailyReport(report: DailyReport): RenderedReport {
  return {
    subject: subjectFor(report.date, report.timezone),
    html: renderHtml(report),
    text: renderText(report),
    csv: renderCsv(report),
    csvFilename: `conversations-${report.date}.csv`,
  }
}
