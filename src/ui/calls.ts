import { HTTPError, type H3 } from 'h3'
import { z } from 'zod'
import { CALL_STATUSES, followUpChain, listCalls, outcomesByTrace } from '../calls/list-calls.ts'
import type { CallRecord } from '../calls/record.ts'
import { normalizePhone } from '../campaigns/phones.ts'
import type { Runtime } from '../runtime.ts'
import { campaignFrom } from '../reports/campaign.ts'
import { getConversation } from '../webhooks/read-model.ts'
import { fields, shortId, status, table } from './components.ts'
import { fmtTime, html } from './html.ts'
import { page } from './layout.ts'

const CALLS_SHOWN = 100
const opt = z.string().trim().max(200).optional().transform((v) => (v ? v : undefined))
const callsQuerySchema = z.object({
  recipe: opt,
  status: z.union([z.enum(CALL_STATUSES as [string, ...string[]]), z.literal('')]).optional().transform((v) => (v ? v : undefined)),
  phone: opt,
  chain: opt,
})

const when = (c: CallRecord) => (c.scheduled_for ? fmtTime(c.scheduled_for) : 'now')
const outcomeCell = (outcome: { status: string } | undefined) => (outcome ? status(outcome.status) : '—')

/** `/ui/calls`: the ledger of calls switchboard placed or scheduled, and each follow-up chain. */
export function registerCallsPage(app: H3, rt: Runtime): void {
  app.get('/ui/calls', async (event) => {
    const parsed = callsQuerySchema.safeParse(Object.fromEntries(event.url.searchParams))
    if (!parsed.success) throw new HTTPError({ status: 400, message: parsed.error.issues[0]?.message ?? 'bad filter' })
    const q = parsed.data
    const phone = q.phone ? normalizePhone(q.phone, { defaultCountry: rt.config.defaultCountry }) : undefined
    const calls = await listCalls(rt, {
      recipe: q.recipe,
      status: q.status as CallRecord['status'] | undefined,
      customerPhone: phone ? (phone.ok ? phone.e164 : q.phone) : undefined,
      limit: CALLS_SHOWN,
    })
    const chain = q.chain ? await followUpChain(rt, q.chain) : []
    // What each call came to: the conversation the provider reported for its trace id (one read for the page).
    const byTrace = await outcomesByTrace(rt, [...calls, ...chain].map((c) => c.trace_id ?? ''))
    const outcomeOf = (c: CallRecord) => (c.trace_id ? byTrace.get(c.trace_id) : undefined)
    const outcomes = await Promise.all(chain.map(async (c) => outcomeOf(c) ?? (c.conversation_id ? await getConversation(rt, c.conversation_id) : undefined)))
    const option = (value: string, current: string | undefined) => html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${value || 'any'}</option>`
    return page(event, {
      title: 'Calls',
      body: html`<form method="get" action="/ui/calls" class="filters" role="search" aria-label="Filter calls">
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
  html`<a href="${`/ui/calls?${new URLSearchParams({ ...(q.phone ? { phone: q.phone } : {}), chain: c.id })}`}" title="the follow-up chain of this call">${c.customer_phone}</a>`,
  String(c.agent_id), c.recipe ?? 'proxy', campaignFrom(c.campaign, c.recipe, c.agent_id, () => c.parameters.find((p) => p.name === 'campaign')?.value), status(c.status),
  outcomeCell(outcomeOf(c)), when(c), shortId(c.idempotency_key),
]), 'No call matches.')}`,
    })
  })
}
