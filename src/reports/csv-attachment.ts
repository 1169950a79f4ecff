import { fmtBytes } from './format.ts'
import type { MailAttachment } from './compose-mail.ts'
import { zipOneFile } from './zip-one-file.ts'

/**
 * The most bytes of CSV a report attaches as it is; past it the CSV is attached zipped. A day of 100,000
 * conversations is a 13 MiB CSV: an 18 MB message once base64-encoded — over the 10 MB many relays take (Postmark,
 * SES's classic limit), and at 150,000 a day over the 25 MB of Gmail and Microsoft 365, every day's report refused
 * for good. Zipped it is about a fifteenth of that. Up to 5 MiB (~35,000 conversations, under 7 MB encoded) it stays
 * a plain CSV that a spreadsheet opens at once; a zip opens with a double click on Windows and macOS.
 */
export const PLAIN_CSV_MAX_BYTES = 5 * 1024 * 1024

/** The report's conversations as attached: a CSV, or the same CSV in a zip when it is over PLAIN_CSV_MAX_BYTES. */
export interface CsvAttachment extends MailAttachment {
  zipped: boolean
  /** The CSV's own size (bytes of UTF-8). */
  csvBytes: number
}

/** `csv` (named `filename`) as the report attaches it; a zip's entry is dated `dateMs`, so one day's mail is one set of bytes. */
export function csvAttachment(csv: string, filename: string, dateMs: number): CsvAttachment {
  const csvBytes = Buffer.byteLength(csv, 'utf8')
  if (csvBytes <= PLAIN_CSV_MAX_BYTES) return { filename, content: csv, contentType: 'text/csv; charset=utf-8', zipped: false, csvBytes }
  return {
    filename: `${filename.replace(/\.csv$/i, '')}.zip`,
    content: zipOneFile(filename, Buffer.from(csv, 'utf8'), new Date(dateMs)),
    contentType: 'application/zip',
    zipped: true,
    csvBytes,
  }
}

/** What the mail's text says about its attachment (the dashboard's preview has none: a plain CSV, as it would be). */
export type AttachedCsv = Pick<CsvAttachment, 'zipped' | 'csvBytes'>

/** The report's line about its attachment: where every conversation of the day is. */
export function attachmentNote(attachment: AttachedCsv | undefined): string {
  if (!attachment?.zipped) return 'Every conversation of the day is in the attached CSV.'
  return `Every conversation of the day is in the attached CSV, zipped (${fmtBytes(attachment.csvBytes)} unzipped: too large to attach as it is).`
}
