import { CliError, defineCommand, intFlag, JSON_OPTION, limitOption } from '../cli-kit.ts'
import { CALL_STATUSES, decodeCallsCursor, encodeCallsCursor, LIST_CALLS_MAX, listCalls, outcomesByTrace } from './list-calls.ts'
import type { CallStatus } from './record.ts'
import type { Runtime } from '../runtime.ts'
import { printable } from '../utils/printable.ts'
import { normalizePhone } from '../campaigns/phones.ts'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** A value as a shell reads it back as one word: quoted only when it needs to be (a recipe named `a b`). */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)

export const callsListCommand = defineCommand({
  name: 'calls list',
  readsStoredData: true,
  summary: 'calls switchboard placed or scheduled (trace id, agent, number, scheduled_for, recipe, idempotency key, retry_context, status, what the call came to, and why one was refused)',
  usage: '[--status S] [--recipe NAME] [--phone NUMBER] [--limit N] [--before CURSOR] [--json]',
  options: {
    status: { type: 'string', value: 'S', help: `only calls in this state: ${CALL_STATUSES.join(', ')}` },
    recipe: { type: 'string', value: 'NAME', help: 'only calls this recipe placed or scheduled' },
    phone: { type: 'string', value: 'NUMBER', help: 'only calls to this contact, however its number was written (national forms by DEFAULT_COUNTRY)' },
    limit: limitOption(LIST_CALLS_MAX),
    before: { type: 'string', value: 'CURSOR', help: 'the next page: the cursor the previous page printed at its end' },
    json: JSON_OPTION,
  },
  examples: ['calls list --recipe no-answer-followup --status scheduled'],
  async run(ctx) {
    const status = ctx.values.status as string | undefined
    if (status !== undefined && !CALL_STATUSES.includes(status as CallStatus)) {
      throw new CliError(`--status must be one of ${CALL_STATUSES.join(', ')} (got "${status}")`)
    }
    const limit = intFlag(ctx.values, 'limit', 50)!
    if (limit < 1 || limit > LIST_CALLS_MAX) throw new CliError(`--limit must be from 1 to ${LIST_CALLS_MAX} (got ${limit})`)
    const beforeText = ctx.values.before as string | undefined
    const before = beforeText === undefined ? undefined : decodeCallsCursor(beforeText)
    if (beforeText !== undefined && !before) throw new CliError(`--before takes the cursor a previous page printed (got "${beforeText}")`)
    const phone = ctx.values.phone as string | undefined
    const rt = await ctx.runtime()
    // A value that is no phone number matches no call: a mistake, not an empty list.
    const asked = phone === undefined ? undefined : normalizePhone(phone, { defaultCountry: rt.config.defaultCountry })
    if (asked && !asked.ok) throw new CliError(`--phone must be a phone number (got "${printable(phone!, 60)}": ${asked.reason})`)
    // One row more than the page tells whether another page follows, without a count over the ledger.
    const recipe = ctx.values.recipe as string | undefined
    const found = await listCalls(rt, { status: status as CallStatus | undefined, recipe, ...(phone ? { customerPhone: phone } : {}), limit: limit + 1, before })
    const calls = found.slice(0, limit)
    const more = found.length > limit
    const outcomes = await outcomesByTrace(rt, calls.map((c) => c.trace_id ?? ''))
    const waits = await queuedWaits(rt, calls.filter((c) => c.status === 'queued').map((c) => c.id))
    const rows = calls.map((c) => ({
      trace_id: c.trace_id,
      agent_id: c.agent_id,
      customer_phone: c.customer_phone,
      scheduled_for: iso(c.scheduled_for),
      recipe: c.recipe,
      campaign: c.campaign,
      idempotency_key: c.idempotency_key,
      retry_context: c.retry_context,
      previous_conversation_id: c.previous_conversation_id,
      status: c.status,
      // The call's placing says "initiated"; what happened on the line is the conversation's.
      outcome: (c.trace_id && outcomes.get(c.trace_id)?.status) || null,
      outcome_conversation_id: (c.trace_id && outcomes.get(c.trace_id)?.conversation_id) || null,
      error: c.error,
      // A queued call's place in the paced queue: when it is next tried, and what it waits on (a provider limit's 429).
      next_attempt_at: iso(waits.get(c.id)?.next_attempt_at ?? null),
      waiting_on: waits.get(c.id)?.last_error ?? null,
      created_at: iso(c.created_at),
      /** Pass to --before for the calls after this one. */
      cursor: encodeCallsCursor(c),
    }))
    if (ctx.values.json) return void ctx.json(rows)
    // The error last: why a call was rejected or failed (empty for the rest).
    ctx.table(rows.map((r) => ({ ...r, error: r.error ?? (r.status === 'queued' && r.next_attempt_at ? `waiting${r.waiting_on ? ` (${r.waiting_on})` : ''}; next try ${r.next_attempt_at}` : null) })), ['created_at', 'status', 'outcome', 'agent_id', 'customer_phone', 'scheduled_for', 'recipe', 'trace_id', 'idempotency_key', 'retry_context', 'error'])
    const last = rows.at(-1)
    if (more && last) {
      // The filters belong to the next page too: without them the printed command pages through every call.
      const next = ['calls list', ...(recipe === undefined ? [] : ['--recipe', shellWord(recipe)]), ...(status === undefined ? [] : ['--status', status]), ...(phone ? ['--phone', shellWord(phone)] : []), '--before', last.cursor]
      if (limit !== 50) next.push('--limit', String(limit))
      ctx.write(`${rows.length} call(s) shown, newest first; older ones: ${next.join(' ')}\n`)
    } else ctx.write(`${rows.length} call(s)${before ? ' on this page' : ''}; no more\n`)
  },
})

export const callsCommands = [callsListCommand]

/** The queue rows of queued calls, by id: when each is next tried and what it last waited on. */
async function queuedWaits(rt: Runtime, ids: string[]): Promise<Map<string, { next_attempt_at: number; last_error: string | null }>> {
  if (ids.length === 0) return new Map()
  const rows = await rt.store.db.selectFrom('call_queue').select(['id', 'next_attempt_at', 'last_error']).where('id', 'in', ids).execute()
  return new Map(rows.map((r) => [r.id, { next_attempt_at: Number(r.next_attempt_at), last_error: r.last_error }]))
}
