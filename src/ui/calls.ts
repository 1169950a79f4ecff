import type { H3 } from 'h3'
import { z } from 'zod'
import { CALL_STATUSES, decodeCallsCursor, encodeCallsCursor, followUpChain, listCalls, outcomesByTrace, type CallsCursor } from '../calls/list-calls.ts'
import type { CallRecord } from '../calls/record.ts'
import type { Runtime } from '../runtime.ts'
import { campaignFrom } from '../reports/campaign.ts'
import { getConversation } from '../webhooks/read-model.ts'
import { fields, shortId, status, table } from './components.ts'
import { fmtTime, html } from './html.ts'
import { page } from './layout.ts'
import { MAX_CURSOR_LENGTH, MAX_FILTER_LENGTH } from './events-filter.ts'
import { badQuery } from './responses.ts'

/** Calls a page lists, newest first; older ones are on the next page (a keyset cursor, as the events page's). */
export const CALLS_PAGE_SIZE = 100
const blank = (v: unknown) => (typeof v === 'string' ? v.trim() || undefined : v)
const opt = (name: string, max = MAX_FILTER_LENGTH) => z.preprocess(blank, z.string().max(max, { error: `${name} must be at most ${max} characters` }).optional())
const callsQuerySchema = z.object({
  recipe: opt('recipe'),
  status: z.preprocess(blank, z.enum(CALL_STATUSES, { error: `status must be one of ${CALL_STATUSES.join(', ')} (or empty for any)` }).optional()),
  phone: opt('phone'),
  chain: opt('chain'),
  before: opt('before', MAX_CURSOR_LENGTH),
})
type CallsQuery = z.output<typeof callsQuerySchema>

/** The latest instant a Date holds (+275760-09-13): the page shows the cursor's time, and past it there is none to show. */
const MAX_DATE_MS = 8.64e15

/** A cursor this page did not make (a time no Date or bigint holds, an id with a NUL) starts from the top. */
function cursorOf(value: string | undefined): CallsCursor | undefined {
  const cursor = value ? decodeCallsCursor(value) : undefined
  return cursor && Number.isSafeInteger(cursor.createdAt) && cursor.createdAt >= 0 && cursor.createdAt <= MAX_DATE_MS && !cursor.id.includes('\0') ? cursor : undefined
}

/** Says which part of the ledger the page is: it listed the newest 100 and said nothing of the rest. */
function pageNote(before: CallsCursor | undefined, more: boolean): string {
  const rest = more ? '; older ones are on the next page' : ''
  if (before) return `Calls older than the previous page's (created ${fmtTime(before.createdAt)} or earlier)${rest}.`
  return more ? `The newest ${CALLS_PAGE_SIZE} calls${rest}.` : ''
}

/** The filters as a query string (no cursor, no chain): for the page links. */
function filterParams(q: CallsQuery): URLSearchParams {
  const p = new URLSearchParams()
  for (const key of ['recipe', 'status', 'phone'] as const) {
    const v = q[key]
    if (v) p.set(key, v)
  }
  return p
}

const when = (c: CallRecord) => (c.scheduled_for ? fmtTime(c.scheduled_for) : 'now')
const outcomeCell = (outcome: { status: string } | undefined) => (outcome ? status(outcome.status) : '—')

/** `/ui/calls`: the ledger of calls switchboard placed or scheduled, and each follow-up chain. */
export function registerCallsPage(app: H3, rt: Runtime): void {
  app.get('/ui/calls', async (event) => {
    const parsed = callsQuerySchema.safeParse(Object.fromEntries(event.url.searchParams))
    if (!parsed.success) throw badQuery(parsed.error)
    const q = parsed.data
    const before = cursorOf(q.before)
    // One more than a page: whether older calls follow, so the last page has no "Older" link to an empty one.
    const listed = await listCalls(rt, {
      recipe: q.recipe,
      status: q.status,
      customerPhone: q.phone,
      limit: CALLS_PAGE_SIZE + 1,
      before,
    })
    const calls = listed.slice(0, CALLS_PAGE_SIZE)
    const last = calls[calls.length - 1]
    const filters = filterParams(q)
    const older = listed.length > CALLS_PAGE_SIZE && last ? new URLSearchParams([...filters, ['before', encodeCallsCursor(last)]]) : undefined
    const note = pageNote(before, older !== undefined)
    const chain = q.chain ? await followUpChain(rt, q.chain) : []
    // What each call came to: the conversation the provider reported for its trace id (one read for the page).
    const byTrace = await outcomesByTrace(rt, [...calls, ...chain].map((c) => c.trace_id ?? ''))
    const outcomeOf = (c: CallRecord) => (c.trace_id ? byTrace.get(c.trace_id) : undefined)
    const outcomes = await Promise.all(chain.map(async (c) => outcomeOf(c) ?? (c.conversation_id ? await getConversation(rt, c.conversation_id) : undefined)))
    const option = (value: string, current: string | undefined) => html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${value || 'any'}</option>`
    return page(event, {
      title: 'Calls',
      body: html`<form method="get" action="ui/calls" class="filters" role="search" aria-label="Filter calls">
<label>Recipe<input name="recipe" value="${q.recipe ?? ''}"></label>
<label>Status<select name="status">${['', ...CALL_STATUSES].map((s) => option(s, q.status))}</select></label>
<label>Phone<input name="phone" type="tel" value="${q.phone ?? ''}"></label>
<button type="submit">Filter</button>
</form>
${chain.length ? html`<section aria-label="Follow-up chain"><h2>Follow-up chain</h2>
${chain.map((c, i) => html`<h3>Attempt ${i + 1}${c.id === q.chain ? ' (selected)' : ''}</h3>
${fields(`Attempt ${i + 1}`, [
  ['Phone', c.customer_phone],
  ['Status', status(c.status)],
  ['Outcome', outcomeCell(outcomes[i])],
  ['Scheduled for', when(c)],
  ['Idempotency key', c.idempotency_key],
  ['Conversation', c.conversation_id ?? '—'],
  ['Continues', c.previous_conversation_id ?? '—'],
  ['retry_context', c.retry_context ? html`<pre tabindex="0"><code>${JSON.stringify(c.retry_context, null, 2)}</code></pre>` : '—'],
  ['Error', c.error ?? '—'],
])}`)}</section>` : ''}
<h2>Ledger</h2>
${table('Calls', ['Created', 'Phone', 'Agent', 'Recipe', 'Campaign', 'Status', 'Outcome', 'Scheduled for', 'Idempotency key'], calls.map((c) => [
  fmtTime(c.created_at),
  html`<a href="${`ui/calls?${new URLSearchParams({ ...(q.phone ? { phone: q.phone } : {}), chain: c.id })}`}" title="the follow-up chain of this call">${c.customer_phone}</a>`,
  String(c.agent_id), c.recipe ?? 'proxy', campaignFrom(c.campaign, c.recipe, () => c.parameters.find((p) => p.name === 'campaign')?.value), status(c.status),
  outcomeCell(outcomeOf(c)), when(c), shortId(c.idempotency_key),
]), before ? 'No older call matches.' : 'No call matches.')}
${note ? html`<p>${note}</p>` : ''}
<nav aria-label="Pages" class="actions">
${before ? html`<a href="${`ui/calls${filters.size ? `?${filters}` : ''}`}">← Newest</a>` : ''}
${older ? html`<a href="${`ui/calls?${older}`}" rel="next">Older →</a>` : ''}
</nav>`,
    })
  })
}
