import { defineRecipe } from 'switchboard'

// A follow-up recipe: calls back contacts who did not answer or were busy, inside their local calling
// hours, with `retry_context` from the previous call. Edit the settings, then try it without a provider:
//   npm run -s cli -- recipes test __NAME__ --events data/samples/no-answer-events.json
// Reference: docs/recipes.md (every ctx member, with examples).

// ── Settings ────────────────────────────────────────────────────────────────────────────────────
/** Calls per contact in all (the first call included). */
const MAX_ATTEMPTS = 3
/** Local calling hours of the recipient. */
const WINDOW = { start: '09:00', end: '21:00' }

export default defineRecipe({
  description: `Follows up unanswered and busy calls, up to ${MAX_ATTEMPTS} attempts, inside local calling hours`,
  // Runs when these webhook events arrive (several arriving together come as one batch)…
  on: ['call.no_answer', 'call.busy'],
  // …and every 30 minutes, to catch anything a lost webhook missed.
  schedule: '*/30 * * * *',
  async run(ctx) {
    // On events: only their conversations (each contact's history still counts). On the schedule: everything recent.
    const conversationIds = (ctx.trigger.events ?? []).map((e) => e.event.data.call.conversation_id)
    const result = await ctx.campaigns.runFollowUps({
      maxAttempts: MAX_ATTEMPTS,
      window: WINDOW,
      ...(conversationIds.length ? { conversationIds } : {}),
    })
    // Each skipped conversation says why (attempt cap, too soon, do-not-call, …).
    for (const skip of result.skips) ctx.log.debug({ conversation_id: skip.conversationId }, skip.reason)
    // What run() returns is the run's summary (`recipes list`, `recipes run`).
    return result.summary
  },
})
