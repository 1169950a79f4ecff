import { randomUUID } from 'node:crypto'
import { basename } from 'node:path'
import { HTTPError, type H3 } from 'h3'
import { decodeCsvText, NotTextError } from '../campaigns/csv-encoding.ts'
import { addToDnc, dncImportTask, listDnc, removeFromDnc, searchDncFile, type DncFileSearch, type DncImportResult } from '../campaigns/dnc.ts'
import { normalizePhone } from '../campaigns/phones.ts'
import { reportableDay, yesterday } from '../reports/day-range.ts'
import { reportOfSubject } from '../reports/format.ts'
import { getMailLog, listMailLog } from '../reports/mail-log.ts'
import { runProcessingTask } from '../coordination/processing-task.ts'
import { reportPreviewTask, reportResendTask } from '../reports/tasks.ts'
import type { Runtime } from '../runtime.ts'
import { shownPath } from '../utils/shown-path.ts'
import { clip, dayNotUnderstood, shortId, status, table, visuallyHidden } from './components.ts'
import { flashMessage } from './flash.ts'
import { field, formOf, MAX_CSV_BYTES } from './form.ts'
import { fmtTime, html, type HtmlValue } from './html.ts'
import { csrfField, page } from './layout.ts'
import { seeOther } from './responses.ts'
import { setPageHeaders } from './security-headers.ts'

/** Where a number came from; an opt-out's conversation is shortened and links to its events. */
function dncSource(source: string | null): HtmlValue {
  const conversation = source?.startsWith('conversation:') ? source.slice('conversation:'.length) : undefined
  if (!conversation) return source ?? ''
  return html`conversation ${shortId(conversation, `ui/events?${new URLSearchParams({ conversation_id: conversation })}`)}`
}

/**
 * The do-not-call file's part of the page: every call checks it as it checks the table, so "is this number listed?" must
 * answer for it — its numbers are shown as listed by the file, which only an edit of the file removes. A file that cannot be
 * read is said so (calls fail on it too), not shown as no numbers.
 */
async function dncFileOf(rt: Runtime, search: string): Promise<DncFileSearch | Error | undefined> {
  return searchDncFile(rt, { search, limit: 100 }).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))
}

function dncFileNote(file: DncFileSearch | Error | undefined): HtmlValue {
  if (!file) return ''
  if (file instanceof Error) return html`<p class="flash error">The do-not-call file cannot be read: ${file.message}</p>`
  return html`<p>The file <code>${shownPath(file.path)}</code> lists ${file.size} number${file.size === 1 ? '' : 's'} too, checked before every call; they are the file's, removed by editing it, not here.</p>`
}

/** How long, and for how many imports, the rows a DNC import could not read are kept for the page it redirects to. */
const IMPORT_ERRORS_KEPT_MS = 15 * 60_000
const IMPORTS_KEPT = 20
/** The most bad rows one import keeps (and the page lists); the notice counts them all. */
const IMPORT_ERRORS_SHOWN = 1000

interface KeptImport {
  at: number
  errors: DncImportResult['errors']
}

/**
 * The bad rows of recent imports, by a random id the redirect carries (`r=`): the import answers 303, so reloading the
 * page never posts the file again, and its counts travel as numbers in the notice — but the rows' values and reasons are
 * the file's text, which a link must never be able to put on the page. Kept in this process only, for a while: a page
 * asked for later, or from another replica, says the details are gone.
 */
function importErrorsStore(now: () => number) {
  const kept = new Map<string, KeptImport>()
  const prune = () => {
    for (const [id, entry] of kept) if (now() - entry.at > IMPORT_ERRORS_KEPT_MS || kept.size > IMPORTS_KEPT) kept.delete(id)
  }
  return {
    keep(errors: DncImportResult['errors']): string {
      const id = randomUUID()
      kept.set(id, { at: now(), errors: errors.slice(0, IMPORT_ERRORS_SHOWN) })
      prune()
      return id
    },
    get(id: string | null): KeptImport | undefined {
      prune()
      return id ? kept.get(id) : undefined
    },
  }
}

function importResult(params: URLSearchParams, kept: KeptImport | undefined): HtmlValue {
  if (params.get('done') !== 'dnc-imported') return ''
  const bad = Number(/^\d+$/.test(params.get('x') ?? '') ? params.get('x') : 0)
  if (bad === 0) return ''
  if (!kept) {
    return html`<p id="dnc-import-result" class="flash error">Its rows with errors are no longer kept to show here (they are for ${IMPORT_ERRORS_KEPT_MS / 60_000} minutes after an import): import the file again to see them — numbers already listed stay as they are.</p>`
  }
  return html`<div id="dnc-import-result" class="flash error">
<p>Rows of the import with errors${kept.errors.length < bad ? ` (the first ${kept.errors.length} of ${bad})` : ''}:</p>
${table('Import errors', ['Row', 'Value', 'Reason'], kept.errors.map((e) => [String(e.row), e.raw, e.reason]))}
</div>`
}

/** `/ui/mail`: the mail log with resend of a failed report, a report preview for any day, and the DNC list. */
export function registerMailPage(app: H3, rt: Runtime): void {
  const imports = importErrorsStore(() => rt.clock.now())
  const render = async (event: Parameters<typeof page>[0]) => {
    const params = event.url.searchParams
    const search = (params.get('q') ?? '').slice(0, 40)
    // A search with no digit matches nothing (every number is digits): said, rather than the list shown as its matches.
    const noDigits = search.trim() !== '' && !/\d/.test(search)
    const tz = rt.config.recipes.timezone
    // Yesterday by the calendar, as the daily report's: 24 hours back is two days back just after a spring-forward midnight.
    const askedDate = reportableDay(params.get('date'), tz)
    const previewDate = askedDate ?? yesterday(rt.clock.now(), tz)
    const [mails, dnc, dncFile] = await Promise.all([listMailLog(rt, 50), listDnc(rt, { search, limit: 100 }), dncFileOf(rt, search)])
    const file = dncFile instanceof Error ? undefined : dncFile
    const shownInTable = new Set(dnc.map((d) => d.phone))
    const fileName = file ? html`<code>${basename(file.path)}</code>` : ''
    const fileOnly = (file?.matches ?? []).filter((phone) => !shownInTable.has(phone))
    return page(event, {
      title: 'Mail & DNC',
      flash: flashMessage(params),
      body: html`<h2>Mail</h2>
${table('Mail log', ['Created', 'Subject', 'To', 'Status', 'Attempts', 'Error', visuallyHidden('Action')], mails.map((m) => [
  fmtTime(m.createdAt), m.subject, m.recipients.join(', '), status(m.status), String(m.attempts), clip(m.error, 80),
  m.status === 'failed' && reportOfSubject(m.subject)
    ? html`<form method="post" action="${`ui/mail/${encodeURIComponent(m.id)}/resend`}" class="inline" data-confirm="Send this report again?">${csrfField(event)}<button type="submit">Resend</button></form>`
    : '',
]), 'Nothing sent yet.')}
<h2>Report preview</h2>
<form method="get" action="ui/mail" class="filters" aria-label="Preview a report">
<label>Day (${tz})<input type="date" name="date" value="${previewDate}"></label><button type="submit">Preview</button>
</form>
${askedDate ? '' : dayNotUnderstood(params.get('date'), previewDate, `yesterday in ${tz}`)}
<iframe class="preview" title="${`Daily report for ${previewDate}`}" sandbox src="${`ui/mail/preview?date=${previewDate}`}"></iframe>
<h2>Do-not-call list</h2>
${importResult(params, imports.get(params.get('r')))}
<form method="get" action="ui/mail" class="filters" role="search" aria-label="Search the do-not-call list">
<label>Search numbers<input name="q" type="search" value="${search}"></label><button type="submit">Search</button>
</form>
<form method="post" action="ui/dnc/add" class="filters" aria-label="Add a number">${csrfField(event)}
<label>Phone<input name="phone" type="tel" required></label>
<label>Reason<input name="reason"></label>
<button type="submit">Add</button>
</form>
<form method="post" action="ui/dnc/import" enctype="multipart/form-data" class="filters" aria-label="Import a CSV">${csrfField(event)}
<label>CSV (number, reason)<input name="file" type="file" accept=".csv,text/csv" required></label>
<button type="submit">Import</button>
</form>
${dncFileNote(dncFile)}
${table('Do-not-call numbers', ['Number', 'Reason', 'Source', 'Added', visuallyHidden('Action')], [
  ...dnc.map((d) => [
    d.phone, d.reason ?? '', file?.has(d.phone) ? html`${dncSource(d.source)}; also listed by the file ${fileName}` : dncSource(d.source), fmtTime(d.addedAt),
    html`<form method="post" action="ui/dnc/remove" class="inline" data-confirm="${`Remove ${d.phone} from the do-not-call list?`}">${csrfField(event)}<input type="hidden" name="phone" value="${d.phone}"><button type="submit" class="secondary" aria-label="${`Remove ${d.phone}`}">Remove</button></form>`,
  ]),
  ...fileOnly.map((phone) => [phone, '', html`listed by the file ${fileName} (edit the file to remove it)`, '', '']),
], noDigits ? 'No number matches: type some digits of the number.' : search ? 'No number matches.' : dncFile instanceof Error || file?.size ? 'No number was added here; the file above is the rest of the list.' : 'The list is empty.')}`,
    })
  }

  app.get('/ui/mail', (event) => render(event))

  // The report exactly as mailed. It has inline styles (mail clients need them), so it gets its own CSP
  // that allows styles but no script at all, and is shown in a sandboxed frame of the mail page.
  app.get('/ui/mail/preview', async (event) => {
    const date = reportableDay(event.url.searchParams.get('date'), rt.config.recipes.timezone)
    if (!date) throw new HTTPError({ status: 400, message: 'date must be a calendar day, YYYY-MM-DD' })
    // Built in the processing thread under `serve`: the receiver's loop keeps answering webhooks meanwhile.
    const html = await runProcessingTask(rt, reportPreviewTask, { date })
    // A page's headers, then the two it needs otherwise: its own CSP, and framing by the mail page.
    setPageHeaders(event)
    event.res.headers.set('content-type', 'text/html; charset=utf-8')
    event.res.headers.set('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'")
    event.res.headers.set('x-frame-options', 'SAMEORIGIN')
    return html
  })

  app.post('/ui/mail/:id/resend', async (event) => {
    const mail = await getMailLog(rt, decodeURIComponent(event.context.params?.id ?? ''))
    if (!mail) throw new HTTPError({ status: 404, message: 'no such mail' })
    const report = reportOfSubject(mail.subject)
    if (mail.status !== 'failed' || !report) return seeOther(event, 'ui/mail?done=resend-failed')
    // Mail bodies are not kept: the report is built again for its day and sent to the same people.
    const result = await runProcessingTask(rt, reportResendTask, { date: report.date, timezone: report.timezone, to: mail.recipients })
    rt.log.info({ mail_id: mail.id, resent_as: result.mailId, status: result.status }, 'dashboard: report resent')
    return seeOther(event, result.status === 'failed' ? 'ui/mail?done=resend-failed&s=failed' : `ui/mail?done=resent&s=${result.status}`)
  })

  app.post('/ui/dnc/add', async (event) => {
    const form = await formOf(event)
    const phone = field(form, 'phone')
    if (!normalizePhone(phone, { defaultCountry: rt.config.defaultCountry }).ok) return seeOther(event, 'ui/mail?done=dnc-invalid')
    const { added, scheduledWithProvider } = await addToDnc(rt, phone, { reason: field(form, 'reason') || null, source: 'dashboard' })
    return seeOther(event, `ui/mail?done=dnc-added&n=${added ? 1 : 0}&k=${scheduledWithProvider}`)
  })

  app.post('/ui/dnc/remove', async (event) => {
    const removed = await removeFromDnc(rt, field(await formOf(event), 'phone'))
    return seeOther(event, `ui/mail?done=dnc-removed&n=${removed ? 1 : 0}`)
  })

  app.post('/ui/dnc/import', async (event) => {
    const file = (await formOf(event)).get('file')
    if (!file || typeof file === 'string') throw new HTTPError({ status: 400, message: 'choose a CSV file' })
    if (file.size > MAX_CSV_BYTES) throw new HTTPError({ status: 413, message: 'the CSV is larger than 5 MB' })
    // Off the receiver's thread under `serve` (`dncImportTask`): a 5 MB file is seconds of parsing.
    // Decoded as the dnc.csv file is: a spreadsheet's "Unicode Text" export is UTF-16, and read as UTF-8 every line of
    // it was "not a phone number"; a Windows-1252 export is mended; a workbook is refused, not imported as nothing.
    const text = await decodeCsvText(new Uint8Array(await file.arrayBuffer()), { name: 'the file' }).catch((error: unknown) => {
      if (error instanceof NotTextError) throw new HTTPError({ status: 400, message: error.message })
      throw error
    })
    const result = await runProcessingTask(rt, dncImportTask, { text, source: `dashboard import: ${file.name}`.slice(0, 200) })
    // 303 to the page, as every other form: reloading the result no longer posts the file again.
    const back = new URLSearchParams({ done: 'dnc-imported', n: String(result.added), e: String(result.existing), x: String(result.errors.length) })
    if (result.errors.length) back.set('r', imports.keep(result.errors))
    return seeOther(event, `ui/mail?${back}`)
  })
}
