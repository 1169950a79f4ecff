import { afterEach, expect, it } from 'vitest'
import { recipeDestinations } from '../../src/destinations/publish.ts'
import { renderPlan } from '../../src/recipes/present.ts'
import type { Effects } from '../../src/effects.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DEST_SECRET } from './helpers.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

it('ctx.destinations.publish only plans in a dry run, and queues for the matching destinations otherwise', async () => {
  rt = await createTestRuntime({
    env: {
      DESTINATIONS: JSON.stringify([
        { name: 'crm', url: 'https://crm.example.com/h', secret: DEST_SECRET, events: ['followup.*'] },
        { name: 'warehouse', url: 'https://wh.example.com/h', secret: DEST_SECRET, events: ['call.completed'] },
      ]),
    },
  })
  const dry: Effects = { dryRun: true, plan: [] }
  const planned = await recipeDestinations(rt, dry, 'no-answer-followup').publish('followup.scheduled', { phone: '+919876543210' }, { idempotencyKey: 'c1' })
  expect(planned.destinations).toEqual(['crm'])
  expect(dry.plan).toEqual([{ kind: 'publish', event_type: 'followup.scheduled', event_id: planned.eventId, destinations: ['crm'] }])
  expect(renderPlan(dry.plan)).toContain(`publish followup.scheduled (${planned.eventId}) to crm`)
  expect(await rt.store.db.selectFrom('destination_deliveries').selectAll().execute()).toEqual([])

  const live: Effects = { dryRun: false, plan: [] }
  const sent = await recipeDestinations(rt, live, 'no-answer-followup').publish('followup.scheduled', { phone: '+919876543210' }, { idempotencyKey: 'c1', conversationId: 'conv-1_1' })
  expect(sent.eventId).toBe(planned.eventId)
  const rows = await rt.store.db.selectFrom('destination_deliveries').selectAll().execute()
  expect(rows).toMatchObject([{ destination: 'crm', event_type: 'followup.scheduled', conversation_id: 'conv-1_1', status: 'pending' }])
  const body = await rt.store.db.selectFrom('destination_payloads').select('payload').where('event_id', '=', sent.eventId).executeTakeFirstOrThrow()
  expect(JSON.parse(body.payload)).toMatchObject({ event_id: sent.eventId, event_type: 'followup.scheduled', data: { phone: '+919876543210' } })
  await expect(recipeDestinations(rt, live, 'r').publish('bad type!', {})).rejects.toThrow(/must be letters/)
  // Deliveries are ordered per conversation through an index Postgres caps (~2,700 bytes an entry): refused by name.
  await expect(recipeDestinations(rt, live, 'r').publish('lead.scored', {}, { conversationId: 'c'.repeat(256) })).rejects.toThrow(/conversationId: must be at most 255 characters/)
  expect(await rt.store.db.selectFrom('destination_deliveries').select('id').execute()).toHaveLength(1)
})

it("a destination's filter runs once per published event (it ran twice: once to plan, again to queue)", async () => {
  rt = await createTestRuntime({ env: { DESTINATIONS: JSON.stringify([{ name: 'crm', url: 'https://crm.example.com/h', secret: DEST_SECRET }]) } })
  let calls = 0
  const filter = () => {
    calls++
    return true
  }
  rt.config = { ...rt.config, destinations: { ...rt.config.destinations, list: rt.config.destinations.list.map((d) => ({ ...d, filter })) } }
  const sent = await recipeDestinations(rt, { dryRun: false, plan: [] }, 'r').publish('followup.scheduled', { phone: '+919876543210' })
  expect(sent.destinations).toEqual(['crm'])
  expect(calls).toBe(1)
  expect(await rt.store.db.selectFrom('destination_deliveries').select('destination').execute()).toEqual([{ destination: 'crm' }])
})
