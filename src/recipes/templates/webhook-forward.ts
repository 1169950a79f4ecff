import { defineRecipe } from 'switchboard'

// A forwarding recipe: posts each completed call's outcome to another system (a CRM, a chat hook).
// Nothing is posted in a dry run. Try it:
//   npm run -s cli -- recipes test __NAME__ --events data/samples/completed-events.json
// Reference: docs/recipes.md (every ctx member, with examples).

// ── Settings ────────────────────────────────────────────────────────────────────────────────────
/** Where to POST; empty forwards nothing (the run only logs what it would send). */
const FORWARD_URL = ''

export default defineRecipe({
  description: 'Forwards completed calls (number, status, results) to FORWARD_URL',
  on: ['call.completed'],
  async run(ctx) {
    let forwarded = 0
    let wouldForward = 0
    for (const { event } of ctx.trigger.events ?? []) {
      const body = {
        conversation_id: event.data.call.conversation_id,
        phone: event.data.call.to_phone,
        status: event.data.call.status,
        results: event.data.results ?? {},
      }
      if (ctx.dryRun || !FORWARD_URL) {
        ctx.log.info({ body }, 'would forward')
        wouldForward++
        continue
      }
      const response = await fetch(FORWARD_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      // Throwing fails the run, so it is recorded (`recipes list`) instead of passing silently.
      if (!response.ok) throw new Error(`${FORWARD_URL} answered ${response.status}`)
      forwarded++
    }
    return wouldForward > 0 ? { forwarded, would_forward: wouldForward } : { forwarded }
  },
})
