import { afterEach, expect, it, vi } from 'vitest'
import { sql } from 'kysely'
import { createApp } from '../../src/server.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

const TOKEN = 'a-long-admin-token-123'
let rt: TestRuntime | undefined
afterEach(async () => {
  vi.restoreAllMocks()
  await rt?.close()
  rt = undefined
})

// A path h3 cannot decode was refused before any route with h3's own `{"status":400,"message":"Bad Request"}`: only the
// proxy answered it in its documented shape. The receiver and /admin have theirs too.
it('a path that is not valid percent-encoded UTF-8 is 400 in the one error shape on the receiver and /admin', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN } })
  const app = createApp(rt)
  for (const [method, path] of [['POST', '/webhooks/%ff%fe'], ['GET', '/admin/events/%ff'], ['GET', '/admin/recipes/%/runs']] as const) {
    const res = await app.fetch(new Request(`http://localhost${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined }))
    expect(res.status, path).toBe(400)
    expect(res.headers.get('content-type'), path).toMatch(/^application\/json/)
    expect(res.headers.get('cache-control'), path).toBe('no-store')
    expect(await res.json(), path).toEqual({ error: { type: 'invalid_request', message: `malformed path: ${path} is not valid percent-encoded UTF-8` } })
  }
  const admin = await app.fetch(new Request('http://localhost/admin/events/%ff', { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(admin.headers.get('x-content-type-options')).toBe('nosniff')
})

// An exception no route caught was logged as JSON and also printed by h3 (console.error) as a multi-line stack trace,
// and answered `{"status":500,"unhandled":true,"message":"HTTPError"}`.
it('an unhandled error is one JSON log line with its message and stack, and a 500 without its details', async () => {
  const logs = captureLogs()
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN }, log: logs.log })
  const app = createApp(rt)
  const printed = vi.spyOn(console, 'error').mockImplementation(() => {})
  const logged = vi.spyOn(console, 'log').mockImplementation(() => {})
  // A database that lost a table: the events page's query throws.
  await sql`drop table webhook_events`.execute(rt.store.db)
  const res = await app.fetch(new Request('http://localhost/ui/events', { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(res.status).toBe(500)
  expect(res.headers.get('content-type')).toMatch(/^text\/html/)
  expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  const page = await res.text()
  expect(page).toContain('internal error (see the service log)')
  expect(page).not.toContain('webhook_events')
  await vi.waitFor(() => expect(logs.lines.length).toBeGreaterThan(0))
  expect(logs.lines).toHaveLength(1)
  const [line] = logs.lines
  expect(line).toMatchObject({ level: 50, msg: 'unhandled error', method: 'GET', path: '/ui/events', err: expect.stringContaining('webhook_events') })
  expect(line!.stack).toEqual(expect.stringContaining('webhook_events'))
  expect(String(line!.stack).split('\n').length).toBeGreaterThan(1)
  expect(printed).not.toHaveBeenCalled()
  expect(logged).not.toHaveBeenCalled()
})

// The dashboard answers a browser with a page; htmx, a client that is not a browser and a missing asset got h3's own
// `{"status":401,"message":…}` body instead of the `{"error": {"message", "type"}}` every other JSON answer has.
it("the dashboard's JSON refusals are in the one error shape, with their own headers", async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN } })
  const app = createApp(rt)
  const cases: Array<[string, RequestInit, number, string, string]> = [
    ['/ui/events', { headers: { 'hx-request': 'true' } }, 401, 'authentication_error', 'log in at /ui/login (or send Authorization: Bearer $ADMIN_TOKEN)'],
    ['/ui/dnc/add', { method: 'POST', body: 'phone=%2B14155550100' , headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 401, 'authentication_error', 'log in at /ui/login (or send Authorization: Bearer $ADMIN_TOKEN)'],
    ['/ui/assets/nope.js', {}, 404, 'not_found', 'no such asset'],
    ['/ui/events/nope', { headers: { authorization: `Bearer ${TOKEN}`, 'hx-request': 'true' } }, 404, 'not_found', 'no webhook event with id "nope"'],
  ]
  for (const [path, init, status, type, message] of cases) {
    const res = await app.fetch(new Request(`http://localhost${path}`, init))
    expect(res.status, path).toBe(status)
    expect(res.headers.get('content-type'), path).toMatch(/^application\/json/)
    expect(res.headers.get('cache-control'), path).toBe('no-store')
    expect(await res.json(), path).toEqual({ error: { type, message } })
    if (init.headers && 'hx-request' in init.headers && status === 401) expect(res.headers.get('hx-refresh')).toBe('true')
  }
})
