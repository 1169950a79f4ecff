import type { Runtime } from '../runtime.ts'
import { contactIn, contactNumbers } from '../campaigns/contact-lookup.ts'
import { toCallRecord, type CallRecord, type CallStatus } from './record.ts'
import { latestAttempts } from './latest-attempt.ts'

/** Read side of the calls ledger: what switchboard placed or scheduled, newest first. */
export const CALL_STATUSES: CallStatus[] = ['queued', 'pending', 'initiated', 'scheduled', 'failed', 'rejected']

export interface ListCallsQuery {
  status?: CallStatus
  recipe?: string
  campaign?: string
  agentId?: number
  /** The contact, its number written any way (its E.164 form by DEFAULT_COUNTRY, or as the ledger holds it). */
  customerPhone?: string
  /** Default 50, at most 1000 per page. */
  limit?: number
  /** Only calls older than this position (a `cursor` from an earlier page): the next page. */
  before?: CallsCursor
}

/** A position in the newest-first order: ties on `created_at` are broken by id. */
export interface CallsCursor {
  createdAt: number
  id: string
}

/** The cursor is opaque to users: base64url of the position, so a shell passes it around unquoted. */
export function encodeCallsCursor(call: Pick<CallRecord, 'created_at' | 'id'>): string {
  return Buffer.from(JSON.stringify([Number(call.created_at), call.id])).toString('base64url')
}

export function decodeCallsCursor(text: string): CallsCursor | undefined {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown
    if (Array.isArray(value) && value.length === 2 && Number.isInteger(value[0]) && typeof value[1] === 'string') {
      return { createdAt: value[0] as number, id: value[1] }
    }
  } catch {
    // not ours
  }
  return undefined
}

export const LIST_CALLS_MAX = 1000

export async function listCalls(rt: Runtime, query: ListCallsQuery = {}): Promise<CallRecord[]> {
  // One over the page size is allowed: callers ask for a row more to learn whether another page follows.
  const limit = Math.min(Math.max(query.limit ?? 50, 1), LIST_CALLS_MAX + 1)
  let q = rt.store.db.selectFrom('calls').selectAll()
  if (query.status) q = q.where('status', '=', query.status)
  if (query.recipe) q = q.where('recipe', '=', query.recipe)
  if (query.campaign) q = q.where('campaign', '=', query.campaign)
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId)
  // The contact however its number was written (src/campaigns/contact-key.ts), as the Events page's phone filter.
  if (query.customerPhone) q = q.where(contactIn(rt.store.dialect, 'calls', contactNumbers([{ number: query.customerPhone }], rt.config.defaultCountry)))
  const before = query.before
  if (before) {
    q = q.where((eb) => eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]))
  }
  const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  return rows.map(toCallRecord)
}

/** What became of a placed call: the conversation the provider's webhooks reported for its trace id. */
export interface CallOutcome {
  conversation_id: string
  /** The conversation's status (completed, no_answer, busy, failed, …; in_progress until a terminal event). */
  status: string
}

/**
 * The outcomes of calls by trace id, from the read model (one indexed read for a page of calls). A call has one once
 * the provider's first webhook for it arrived; a queued, refused or still-scheduled call has none.
 */
export async function outcomesByTrace(rt: Runtime, traceIds: string[]): Promise<Map<string, CallOutcome>> {
  const wanted = [...new Set(traceIds.filter(Boolean))]
  if (wanted.length === 0) return new Map()
  const rows = await rt.store.db.selectFrom('conversations').select(['trace_id', 'conversation_id', 'status', 'last_event_at', 'retry']).where('trace_id', 'in', wanted).execute()
  // A call the platform retried has a conversation per attempt under its trace id: its outcome is the last attempt's.
  const latest = latestAttempts(rows, (r) => r.trace_id!)
  return new Map([...latest].map(([trace, r]) => [trace, { conversation_id: r.conversation_id, status: r.status }]))
}

/** Calls created in [fromMs, toMs) by status (the dashboard's "calls today"). */
export async function countCallsByStatus(rt: Runtime, fromMs: number, toMs: number): Promise<Array<{ status: CallStatus; count: number }>> {
  const rows = await rt.store.db
    .selectFrom('calls')
    .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
    .where('created_at', '>=', fromMs)
    .where('created_at', '<', toMs)
    .groupBy('status')
    .execute()
  return rows.map((r) => ({ status: r.status as CallStatus, count: Number(r.n) }))
}

export async function getCall(rt: Runtime, id: string): Promise<CallRecord | undefined> {
  const row = await rt.store.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst()
  return row ? toCallRecord(row) : undefined
}

/**
 * The follow-up chain a call belongs to, first attempt first: each follow-up names the conversation it
 * continues (`previous_conversation_id`), so the chain is walked back to its start and then forward. The conversation
 * a call became is the ledger's `conversation_id` when the provider's answer gave it, and otherwise the one its webhooks
 * named for its `trace_id` (the read model's): the provider answers a new call with `conversation_id: null` — the record
 * is made as the call starts — so a chain of calls placed through the proxy or by a recipe was never linked.
 */
export async function followUpChain(rt: Runtime, id: string, maxLength = 20): Promise<CallRecord[]> {
  const db = rt.store.db
  const start = await getCall(rt, id)
  if (!start) return []
  const chain: CallRecord[] = [start]
  const seen = new Set([start.id])
  let first = start
  while (first.previous_conversation_id && chain.length < maxLength) {
    const row = await callThatBecame(rt, first.previous_conversation_id)
    if (!row || seen.has(row.id)) break
    first = row
    seen.add(first.id)
    chain.unshift(first)
  }
  let last = start
  for (let became = await conversationsOf(rt, last); became.length > 0 && chain.length < maxLength; became = await conversationsOf(rt, last)) {
    const row = await db.selectFrom('calls').selectAll().where('previous_conversation_id', 'in', became).orderBy('created_at').executeTakeFirst()
    if (!row || seen.has(row.id)) break
    last = toCallRecord(row)
    seen.add(last.id)
    chain.push(last)
  }
  return chain
}

/**
 * The conversations `call` became: the provider's answer's, and its webhooks' (by trace id) — one per attempt when the
 * platform retried it, and a follow-up continues the last (only the first was looked for: the chain stopped there).
 */
async function conversationsOf(rt: Runtime, call: CallRecord): Promise<string[]> {
  const ids = new Set<string>(call.conversation_id ? [call.conversation_id] : [])
  if (call.trace_id) {
    const rows = await rt.store.db.selectFrom('conversations').select('conversation_id').where('trace_id', '=', call.trace_id).limit(MAX_ATTEMPTS_READ).execute()
    for (const row of rows) ids.add(row.conversation_id)
  }
  return [...ids]
}

/** More conversations than any platform's retries give one call (a trace id shared by a bug's thousands is cut here). */
const MAX_ATTEMPTS_READ = 50

/** The call that became `conversationId`: by the ledger's conversation id, else by the trace id its webhooks gave. */
async function callThatBecame(rt: Runtime, conversationId: string): Promise<CallRecord | undefined> {
  const db = rt.store.db
  const byId = await db.selectFrom('calls').selectAll().where('conversation_id', '=', conversationId).orderBy('created_at').executeTakeFirst()
  if (byId) return toCallRecord(byId)
  const conversation = await db.selectFrom('conversations').select('trace_id').where('conversation_id', '=', conversationId).executeTakeFirst()
  if (!conversation?.trace_id) return undefined
  const byTrace = await db.selectFrom('calls').selectAll().where('trace_id', '=', conversation.trace_id).orderBy('created_at').executeTakeFirst()
  return byTrace ? toCallRecord(byTrace) : undefined
}
