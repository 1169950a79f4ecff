import { afterEach, expect, it } from 'vitest'
import { defineRecipe } from '../../src/recipes/define.ts'
import { executeRun } from '../../src/recipes/runner.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { makeEvent } from '../webhooks/helpers.ts'

/**
 * `ctx.data.events()` is typed as the provider's events: a CRM's event on a named target (its sender's own body) came
 * back among them, and a recipe reading `e.event.data.call.status`, as the types invite, failed at run time.
 */
describeEachDialect('ctx.data.events', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  it('returns the provider\'s events (named provider targets and reconciliation\'s too), not a named target\'s of another scheme', async () => {
    rt = await createTestRuntime({ dialect, env: { WEBHOOK_TARGETS: JSON.stringify({ crm: { scheme: 'standard', secrets: 'whsec_Y3JtLXNlY3JldC1jcm0tc2VjcmV0LWNybS1zZWNyZXQ=' }, india: { scheme: 'formant', secrets: 'x' } }) } })
    const at = rt.clock.now()
    const row = (id: string, target: string, body: unknown, source = 'webhook') => ({
      event_id: id, target, event_type: (body as { event_type?: string }).event_type ?? 'contact.updated', conversation_id: null, trace_id: null, agent_id: null,
      body: JSON.stringify(body), headers: '{}', source, received_at: at, status: 'processed', attempts: 1, next_attempt_at: at, claimed_by: null, claimed_until: null, last_error: null, processed_at: at,
    })
    await rt.store.db.insertInto('webhook_events').values([
      row('evt_default', 'formant', makeEvent({ event_id: 'evt_default' })),
      row('evt_india', 'india', makeEvent({ event_id: 'evt_india' })),
      row('reconcile:conv_1:completed', 'reconcile', makeEvent({ event_id: 'reconcile:conv_1:completed' }), 'reconcile'),
      row('msg_crm', 'crm', { type: 'contact.updated', data: { id: 'ct_1' } }),
    ]).execute()
    const reads = defineRecipe({
      description: 'reads the stored events as typed',
      async run(ctx) {
        return (await ctx.data.events()).map((e) => `${e.event_id}:${e.event.data.call.status}`).sort()
      },
    })
    const run = await executeRun(rt, 'reads', reads, { trigger: { type: 'manual' }, dryRun: false, timezone: 'UTC' })
    expect(run.error).toBeNull()
    expect(run.summary).toEqual(['evt_default:completed', 'evt_india:completed', 'reconcile:conv_1:completed:completed'])
  })
})
