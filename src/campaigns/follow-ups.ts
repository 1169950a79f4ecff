import type { Runtime } from '../runtime.ts'
import type { Effects } from '../utils/effects.ts'
import { addToDnc, loadDncList, type DncOptions } from './dnc.ts'
import { normalizePhone } from './phones.ts'
import {
  DEFAULT_FOLLOW_UP,
  planFollowUps,
  type CallInput,
  type ConversationInput,
  type FollowUpOptions,
  type FollowUpResult,
} from './plan-follow-ups.ts'
import { scheduleCalls, type ScheduleCallOutcome } from './schedule-call.ts'

/**
 * The follow-up sweep: read the conversations read model and the calls ledger, plan with
 * `planFollowUps`, record opt-outs in the do-not-call list, and schedule each planned call. This is what
 * the `no-answer-followup` recipe runs, both on `call.no_answer` / `call.busy` events (restricted to that
 * conversation) and on its periodic sweep (everything recent).
 */
export interface RunFollowUpsOptions extends FollowUpOptions {
  /** Recorded on each call placed. */
  recipe?: string | null
  /** How far back calls and conversations count as history for the attempt cap. Default 30 days. */
  historyMs?: number
  dnc?: DncOptions
  apiKey?: string
}

export interface RunFollowUpsResult extends FollowUpResult {
  outcomes: ScheduleCallOutcome[]
  summary: { planned: number; queued: number; placed: number; duplicates: number; blocked: number; rejected: number; failed: number; skipped: number; optOuts: number }
}

const CONVERSATION_COLUMNS = [
  'conversation_id', 'agent_id', 'contact_number', 'status', 'terminal', 'started_at', 'ended_at', 'updated_at',
  'trace_id', 'results', 'call_parameters', 'retry', 'retry_context',
] as const
const CALL_COLUMNS = [
  'id', 'agent_id', 'customer_phone', 'trace_id', 'conversation_id', 'previous_conversation_id', 'recipe', 'campaign',
  'status', 'created_at', 'scheduled_for', 'parameters',
] as const

/** The planner's inputs from the database: everything recent, or one set of conversations' contacts. */
export async function loadFollowUpInputs(
  rt: Runtime,
  options: { since: number; conversationIds?: string[] },
): Promise<{ conversations: ConversationInput[]; calls: CallInput[] }> {
  const db = rt.store.db
  if (!options.conversationIds) {
    const [conversations, calls] = await Promise.all([
      db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where('updated_at', '>=', options.since).execute(),
      db.selectFrom('calls').select(CALL_COLUMNS).where('created_at', '>=', options.since).execute(),
    ])
    return { conversations, calls }
  }
  if (options.conversationIds.length === 0) return { conversations: [], calls: [] }
  const targets = await db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where('conversation_id', 'in', options.conversationIds).execute()
  // History is per contact: every spelling of the numbers involved.
  const numbers = new Set<string>()
  for (const t of targets) {
    if (!t.contact_number) continue
    numbers.add(t.contact_number)
    const n = normalizePhone(t.contact_number, { defaultCountry: rt.config.defaultCountry })
    if (n.ok) numbers.add(n.e164)
  }
  if (numbers.size === 0) return { conversations: targets, calls: [] }
  const list = [...numbers]
  const [history, calls] = await Promise.all([
    db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where('contact_number', 'in', list).where('updated_at', '>=', options.since).execute(),
    db.selectFrom('calls').select(CALL_COLUMNS).where('customer_phone', 'in', list).where('created_at', '>=', options.since).execute(),
  ])
  const seen = new Set(history.map((c) => c.conversation_id))
  return { conversations: [...history, ...targets.filter((t) => !seen.has(t.conversation_id))], calls }
}

export async function runFollowUps(rt: Runtime, options: RunFollowUpsOptions, effects: Effects): Promise<RunFollowUpsResult> {
  const now = rt.clock.now()
  const maxAge = options.maxAgeMs ?? DEFAULT_FOLLOW_UP.maxAgeMs
  const since = now - maxAge - (options.historyMs ?? 30 * 24 * 3_600_000)
  const [inputs, dnc] = await Promise.all([
    loadFollowUpInputs(rt, { since, conversationIds: options.conversationIds }),
    loadDncList(rt, options.dnc),
  ])
  const result = planFollowUps({
    ...inputs,
    dnc,
    now,
    options: { defaultCountry: rt.config.defaultCountry, timeZone: rt.config.recipes.timezone, ...options },
  })
  if (!effects.dryRun) {
    for (const o of result.optOuts) await addToDnc(rt, o.phone, { reason: 'results asked not to be called', source: `conversation:${o.conversationId}` })
  }
  const outcomes = await scheduleCalls(rt, result.plans, effects, { recipe: options.recipe ?? null, apiKey: options.apiKey, dnc: options.dnc, timeZone: options.timeZone })
  const count = (s: ScheduleCallOutcome['status']) => outcomes.filter((o) => o.status === s).length
  return {
    ...result,
    outcomes,
    summary: {
      planned: count('planned'),
      queued: count('queued'),
      placed: count('placed'),
      duplicates: count('duplicate'),
      blocked: count('blocked'),
      rejected: count('rejected'),
      failed: count('failed'),
      skipped: result.skips.length,
      optOuts: result.optOuts.length,
    },
  }
}
