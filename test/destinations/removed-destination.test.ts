import { afterAll, beforeAll, expect, it } from 'vitest'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from '../ui/helpers.ts'
import { deliver, UI_SECRET } from '../ui/seed.ts'
import { runCli } from '../webhooks/helpers.ts'
import { destination } from './helpers.ts'

/**
 * A destination removed from DESTINATIONS keeps its deliveries until they are discarded; what it took (its `events`,
 * its filter) went with its configuration. It is listed with that unknown — not as taking every event — and
 * discarding it counts what went in words that agree with the counts.
 */
const CONFIGURED = [destination('https://crm.example.com/hooks', { events: ['call.completed'] }), destination('https://erp.example.com/in', { name: 'erp' })]
let ui: UiServer
let env: Record<string, string>

beforeAll(async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, DESTINATIONS: JSON.stringify(CONFIGURED) })
  env = { DATA_DIR: ui.dataDir, WEBHOOK_SECRET: UI_SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', DESTINATIONS: JSON.stringify(CONFIGURED) }
  const eventId = await deliver(ui.server, ui.clock, { event_type: 'call.completed' })
  // Deliveries kept under names no longer configured: one pending with one attempt, two with none; and one dead of crm.
  const now = ui.clock.now()
  for (const [id, name, attempts, status] of [['msg_retired_0', 'retired', 1, 'pending'], ['msg_old_0', 'old', 0, 'pending'], ['msg_old_1', 'old', 0, 'pending'], ['msg_crm_0', 'crm', 1, 'dead']] as const) {
    await ui.server.rt.store.db.insertInto('destination_deliveries').values({
      id, destination: name, event_id: eventId, event_type: 'call.completed', conversation_id: null, payload: '',
      order_at: now * 1000, ordered: 0, status, attempts, round_attempts: attempts, next_attempt_at: now, claimed_by: null, claimed_until: null,
      last_status: attempts ? 503 : null, last_error: attempts ? 'HTTP 503' : null, created_at: now, delivered_at: null,
    }).execute()
  }
  await ui.server.rt.store.db.insertInto('destination_attempts').values({
    delivery_id: 'msg_retired_0', attempt: 1, started_at: now, status: 503, latency_ms: 5, result: 'retry', error: 'HTTP 503', response: null,
  }).execute()
}, 60_000)
afterAll(() => ui?.close())

it('lists a destination no longer configured with its events (and ordering) unknown: null in JSON, — in tables, never "all"', async () => {
  const listed = await runCli(['destinations', 'list', '--json'], env)
  expect(listed.code, listed.err).toBe(0)
  const rows = JSON.parse(listed.out) as Array<{ name: string; events: unknown; ordered: unknown }>
  expect(Object.fromEntries(rows.map((r) => [r.name, r.events]))).toEqual({ crm: ['call.completed'], erp: 'all', old: null, retired: null })
  // Whether it was ordered is as unknown.
  expect(Object.fromEntries(rows.map((r) => [r.name, r.ordered]))).toEqual({ crm: false, erp: false, old: null, retired: null })

  const table = await runCli(['destinations', 'list'], env)
  const line = (name: string) => table.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{2,}/)
  expect(line('retired').slice(0, 4)).toEqual(['retired', '(no longer configured)', '—', '—'])
  expect(line('erp')[2]).toBe('all')

  const admin = await fetch(`${ui.server.url}/admin/destinations`, { headers: { authorization: `Bearer ${TOKEN}` } })
  const data = ((await admin.json()) as { data: Array<{ name: string; events: unknown }> }).data
  expect(Object.fromEntries(data.map((r) => [r.name, r.events]))).toEqual({ crm: ['call.completed'], erp: 'all', old: null, retired: null })

  const { jar } = await login(ui.server.url)
  const page = await (await fetch(`${ui.server.url}/ui/destinations`, { headers: { cookie: cookieHeader(jar) } })).text()
  const cells = (name: string) => {
    const row = new RegExp(`<tr><td><a href="ui/destinations\\?destination=${name}">${name}</a></td>(.*?)</tr>`, 's').exec(page)?.[1] ?? ''
    return [...row.matchAll(/<td>(.*?)<\/td>/gs)].map((m) => m[1]!.replace(/<[^>]+>/g, ''))
  }
  // URL, Events.
  expect(cells('retired').slice(0, 2)).toEqual(['(no longer configured)', '—'])
  expect(cells('erp').slice(0, 2)).toEqual(['https://erp.example.com/in', 'all'])
})

// Its pending deliveries read "next attempt: now" and it read `active`, with Replay offered (answered 409): they are never sent.
it('says a destination no longer configured is removed, and its pending deliveries are never sent', async () => {
  const rows = JSON.parse((await runCli(['destinations', 'list', '--json'], env)).out) as Array<{ name: string; state: string }>
  expect(Object.fromEntries(rows.map((r) => [r.name, r.state]))).toEqual({ crm: 'active', erp: 'active', old: 'removed', retired: 'removed' })
  const shown = await runCli(['destinations', 'show', 'msg_old_0'], env)
  expect(shown.out).toMatch(/^next_attempt_at\s+never: its destination is no longer configured$/m)
  const listed = await runCli(['destinations', 'deliveries', '--destination', 'old'], env)
  expect(listed.out).toContain('never: its destination is no longer configured')
  const { jar } = await login(ui.server.url)
  const page = await (await fetch(`${ui.server.url}/ui/destinations/deliveries/msg_old_0`, { headers: { cookie: cookieHeader(jar) } })).text()
  expect(page).toContain('never: its destination is no longer configured')
  expect(page).not.toContain('>Replay</button>')
})

it('counts what replay and discard did in words that agree: 1 delivery, 1 attempt; 2 deliveries, 0 attempts', async () => {
  const replayed = await runCli(['destinations', 'replay', '--destination', 'crm', '--since', '2026-01-01T00:00:00Z'], env)
  expect([replayed.code, replayed.out]).toEqual([0, '1 failed or dead delivery of "crm" queued again\n'])
  const one = await runCli(['destinations', 'discard', 'retired'], env)
  expect([one.code, one.out]).toEqual([0, 'retired: 1 delivery discarded (with 1 attempt)\n'])
  const two = await runCli(['destinations', 'discard', 'old'], env)
  expect([two.code, two.out]).toEqual([0, 'old: 2 deliveries discarded (with 0 attempts)\n'])
})
