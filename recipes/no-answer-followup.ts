import { defineRecipe } from 'switchboard'

// ── Settings: edit these ────────────────────────────────────────────────────────────────────────
/** Calls per contact per campaign in all, the first call included, across no_answer and busy. */
const MAX_ATTEMPTS = 3
/** Follow up with this agent instead of the one that made the call (undefined: the same agent). */
const FOLLOW_UP_AGENT_ID: number | undefined = undefined
/** Minimum wait after an unanswered / busy call before calling again. */
const MIN_GAP_MS = { no_answer: 60 * 60 * 1000, busy: 2 * 60 * 60 * 1000 }
/** Local calling hours of the recipient (24 h clock). */
const WINDOW = { start: '09:00', end: '21:00' }
/** Also retry technical failures (failed, socket_failure, telephony_failed) — sooner. Unreachable never is. */
const TECHNICAL_FAILURES = false
/** The sweep for anything the event trigger missed (a dropped webhook, a restart): every 30 minutes. */
const SWEEP = '*/30 * * * *'

export default defineRecipe({
  description: `Schedules a follow-up (retry_context, same conversation chain) for unanswered and busy calls, up to ${MAX_ATTEMPTS} attempts, inside local calling hours`,
  // Technical failures too when they are followed up, so they are not left for the sweep (up to 30 minutes).
  on: ['call.no_answer', 'call.busy', ...(TECHNICAL_FAILURES ? (['call.failed', 'call.socket_failure', 'call.telephony_failed'] as const) : [])],
  schedule: SWEEP,
  async run(ctx) {
    // On events, plan the whole batch in one pass — just those conversations (their contacts' history
    // still counts); on the sweep, everything recent.
    const conversationIds = ctx.trigger.events?.map((e) => e.event.data.call.conversation_id)
    const result = await ctx.campaigns.runFollowUps({
      maxAttempts: MAX_ATTEMPTS,
      agentId: FOLLOW_UP_AGENT_ID,
      minGapMs: MIN_GAP_MS,
      window: WINDOW,
      technicalFailures: TECHNICAL_FAILURES,
      timeZone: ctx.timezone,
      ...(conversationIds ? { conversationIds } : {}),
    })
    for (const skip of result.skips) ctx.log.debug({ conversation_id: skip.conversationId, code: skip.code }, skip.reason)
    return {
      ...result.summary,
      calls: result.outcomes.map((o) => ({
        status: o.status,
        phone: o.request.parameters.find((p) => p.name === 'customer_phone')?.value ?? null,
        scheduled_for: o.request.scheduled_for ?? null,
        idempotency_key: o.request.idempotency_key ?? null,
        ...('reason' in o ? { reason: o.reason } : {}),
        ...(o.status === 'failed' ? { error: o.error.message } : {}),
      })),
    }
  },
})
