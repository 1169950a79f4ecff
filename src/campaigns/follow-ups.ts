import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { blockedAmong, OPT_OUT_REASON, type DncOptions } from './dnc.ts'
import { dncOverlayOf } from './dry-run-dnc.ts'
import { addToDncFor } from './dnc-effects.ts'
import { contactIn, contactNumbers, type ContactNumbers } from './contact-lookup.ts'
import { chunks } from '../utils/chunks.ts'
import { inValues } from '../db/in-values.ts'
import {
  RETRIED_DEAD_CALL_STATUSES,
  DEFAULT_FOLLOW_UP,
  TECHNICAL_FAILURES,
  numbersToScreen,
  planFollowUps,
  type CallInput,
  type ConversationInput,
  type FollowUpOptions,
  type FollowUpPlan,
  type FollowUpResult,
} from './plan-follow-ups.ts'
import { plannedInDryRun, scheduleCalls, type ScheduleCallOutcome } from './schedule-call.ts'
import { workspaceKey } from '../config/workspace-key.ts'

/**
 * The follow-up sweep: read the conversations read model and the calls ledger, plan with
 * `planFollowUps`, record opt-outs in the do-not-call list, and schedule each planned call. This is what
 * the `no-answer-followup` recipe runs, both on `call.no_answer` / `call.busy` events (restricted to those
 * conversations) and on its periodic sweep (every recent candidate not yet followed up).
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
  /** Things worth knowing, also logged: follow-ups timed in the recipe's zone for numbers whose country has several. */
  warnings: string[]
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

/** How many candidates are planned together: one page's conversations and their contacts' history are in memory at a time. */
const PAGE = 500
/** The most ids or numbers one query looks up (each list is one bound parameter, see src/db/in-values.ts). */
const IN_LIST = 1_000

/**
 * `numbers` in lists of at most IN_LIST values each. The lists' keys and spellings are disjoint from the other lists'
 * (a row is found by its key or, with none, by its spelling): no row is read twice.
 */
function* chunkedContacts(numbers: ContactNumbers): Generator<ContactNumbers> {
  for (let at = 0; at < Math.max(numbers.keys.length, numbers.written.length); at += IN_LIST) {
    yield { keys: numbers.keys.slice(at, at + IN_LIST), written: numbers.written.slice(at, at + IN_LIST) }
  }
}

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
  // The targets' numbers first (two columns), then their contacts' whole history — which holds the targets
  // themselves unless they are older than `since`; only those are read in full on their own. Reading the
  // targets in full too read every one of them twice. Id and number lists go as one parameter each.
  const dialect = rt.store.dialect
  const ids = [...new Set(options.conversationIds)]
  const targets: Array<{ conversation_id: string; contact_number: string | null; contact_key: string | null }> = []
  for (const list of chunks(ids, IN_LIST)) {
    targets.push(...(await db.selectFrom('conversations').select(['conversation_id', 'contact_number', 'contact_key']).where(inValues(dialect, 'conversation_id', list)).execute()))
  }
  // History is per contact, found by its key (src/campaigns/contact-key.ts): every call to the number whatever way it
  // was written; keys and spellings go as one list each, IN_LIST values at a time.
  const numbers = contactNumbers(targets.map((t) => ({ number: t.contact_number, key: t.contact_key })), rt.config.defaultCountry)
  const history: ConversationInput[] = []
  const calls: CallInput[] = []
  for (const list of chunkedContacts(numbers)) {
    const [h, c] = await Promise.all([
      db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where(contactIn(dialect, 'conversations', list)).where('updated_at', '>=', options.since).execute(),
      db.selectFrom('calls').select(CALL_COLUMNS).where(contactIn(dialect, 'calls', list)).where('created_at', '>=', options.since).execute(),
    ])
    history.push(...h)
    calls.push(...c)
  }
  const seen = new Set(history.map((c) => c.conversation_id))
  const older = targets.filter((t) => !seen.has(t.conversation_id)).map((t) => t.conversation_id)
  for (const list of chunks(older, IN_LIST)) {
    history.push(...(await db.selectFrom('conversations').select(CONVERSATION_COLUMNS).where(inValues(dialect, 'conversation_id', list)).execute()))
  }
  return { conversations: history, calls }
}

/**
 * The sweep's candidates, oldest first: terminal conversations of a status that is followed up, recent
 * enough, that no live call in the ledger follows up yet. Everything else would only be skipped — and a
 * month of conversations read at once is what made the sweep's memory grow with the data.
 */
export async function followUpCandidates(
  rt: Runtime,
  options: { endedSince: number; technicalFailures?: boolean; agentIds?: number[] },
): Promise<string[]> {
  if (options.agentIds?.length === 0) return []
  const statuses: string[] = ['no_answer', 'busy', ...(options.technicalFailures ? TECHNICAL_FAILURES : [])]
  let query = rt.store.db
    .selectFrom('conversations')
    .select('conversation_id')
    .where('status', 'in', statuses)
    .where('terminal', '=', 1)
    .where('updated_at', '>=', options.endedSince)
    .where(({ not, exists, selectFrom }) =>
      not(exists(
        selectFrom('calls')
          .select('calls.id')
          .whereRef('calls.previous_conversation_id', '=', 'conversations.conversation_id')
          // A follow-up the provider refused holds its conversation too (FINAL_FOLLOW_UP_STATUSES): not a candidate again.
          .where('calls.status', 'not in', RETRIED_DEAD_CALL_STATUSES),
      )),
    )
  if (options.agentIds) query = query.where('agent_id', 'in', options.agentIds)
  const rows = await query.orderBy('updated_at').orderBy('conversation_id').execute()
  return rows.map((r) => r.conversation_id)
}

/**
 * A dry run's follow-ups already planned earlier in the run (`runFollowUps` called twice): the real run's ledger has
 * them by then, so its sweep does not see those conversations again and a given conversation is skipped as followed
 * up. The dry run's ledger is its plan: it answers the same instead of planning each follow-up twice.
 */
function withoutPlannedEarlier(rt: Runtime, planned: FollowUpResult, effects: Effects, options: RunFollowUpsOptions): void {
  const apiKey = options.apiKey ?? workspaceKey(rt.config)
  const plans: FollowUpPlan[] = []
  for (const plan of planned.plans) {
    const earlier = plannedInDryRun(effects, plan.request, apiKey)
    if (!earlier) plans.push(plan)
    else if (options.conversationIds) {
      planned.skips.push({ conversationId: plan.previousConversationId, phone: plan.phone, campaign: plan.campaign, code: 'already_followed_up', reason: `already followed up (call ${earlier.trace_id ?? earlier.id}, ${earlier.status})` })
    }
  }
  planned.plans = plans
}

/**
 * Plans and schedules follow-ups, a page of candidates at a time: the conversations given (an event
 * batch), or on a sweep every recent terminal no_answer / busy (and technical, when asked) conversation
 * not yet followed up. Each page reads its contacts' whole history, so the attempt cap and "a later
 * call supersedes" hold across pages; memory is bounded by the page, not by the data.
 */
export async function runFollowUps(rt: Runtime, options: RunFollowUpsOptions, effects: Effects): Promise<RunFollowUpsResult> {
  const now = rt.clock.now()
  const maxAge = options.maxAgeMs ?? DEFAULT_FOLLOW_UP.maxAgeMs
  const since = now - maxAge - (options.historyMs ?? 30 * 24 * 3_600_000)
  // The DNC file's national-form numbers are read in the country the contacts are (see DncOptions).
  const dncOptions: DncOptions = { ...options.dnc, defaultCountry: options.dnc?.defaultCountry ?? options.defaultCountry ?? rt.config.defaultCountry }
  const candidates = options.conversationIds
    ? [...new Set(options.conversationIds)]
    : await followUpCandidates(rt, { endedSince: now - maxAge, technicalFailures: options.technicalFailures, agentIds: options.agentIds })
  const result: FollowUpResult = { plans: [], skips: [], optOuts: [] }
  const outcomes: ScheduleCallOutcome[] = []
  for (const page of chunks(candidates, PAGE)) {
    const inputs = await loadFollowUpInputs(rt, { since, conversationIds: page })
    const planOptions = { defaultCountry: rt.config.defaultCountry, timeZone: rt.config.recipes.timezone, ...options, conversationIds: page }
    // The do-not-call list is asked about the page's numbers only. Read whole, as it was, it cost every run of an event
    // batch ~175 ms at 100,000 numbers on SQLite (a page's numbers: ~1 ms), however few contacts the batch had.
    const dnc = await blockedAmong(rt, numbersToScreen(inputs.conversations, planOptions), dncOptions, dncOverlayOf(effects))
    const planned = planFollowUps({ ...inputs, dnc, now, options: planOptions })
    if (effects.dryRun) withoutPlannedEarlier(rt, planned, effects, options)
    for (const o of planned.optOuts) await addToDncFor(rt, effects, o.phone, { reason: OPT_OUT_REASON, source: `conversation:${o.conversationId}` })
    outcomes.push(...(await scheduleCalls(rt, planned.plans, effects, { recipe: options.recipe ?? null, apiKey: options.apiKey, dnc: dncOptions, timeZone: options.timeZone })))
    result.plans.push(...planned.plans)
    result.skips.push(...planned.skips)
    result.optOuts.push(...planned.optOuts)
  }
  const count = (s: ScheduleCallOutcome['status']) => outcomes.filter((o) => o.status === s).length
  // As launchBatch warns of rows with no timezone column: a +1 number with no `timezone` parameter was followed up at
  // 07:01 in Los Angeles, timed in the recipe's zone without a word (a recipe author's probe).
  const warnings: string[] = []
  const guessed = new Map<string, number>()
  for (const plan of result.plans) if (plan.timeZoneGuessed) guessed.set(plan.timeZoneGuessed, (guessed.get(plan.timeZoneGuessed) ?? 0) + 1)
  if (guessed.size > 0) {
    const counts = [...guessed].map(([country, n]) => `${country}: ${n}`).join(', ')
    const zone = options.timeZone ?? rt.config.recipes.timezone
    const warning = `follow-ups to numbers of countries with several time zones have no timezone parameter (${counts}): their calling window is taken in ${zone}; give the calls a timezone parameter (an IANA zone, or EST, CT, PT…) to call each in their own`
    warnings.push(warning)
    rt.log.warn({ recipe: options.recipe ?? null, follow_ups: [...guessed.values()].reduce((a, b) => a + b, 0), countries: counts, time_zone: zone }, warning)
  }
  return {
    ...result,
    outcomes,
    warnings,
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
