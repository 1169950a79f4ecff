import { connect } from 'node:net'
import { H3, serve } from 'h3'
import { afterEach, expect, it } from 'vitest'
import { registerWebhookRoutes } from '../../src/webhooks/index.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { DOCTOR_PROBE_ANSWER, DOCTOR_PROBE_BODY } from '../../src/webhooks/doctor-probe.ts'
import { webhookState } from '../../src/webhooks/state.ts'
import { signFormant } from '../../src/webhooks/verify.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * What refusals write to the log: each is counted in full, but a flood of one (a scanner's unknown targets or bad
 * signatures) writes a line a second per target and reason, quoting at most 64 characters of what the caller sent;
 * a sender that hangs up mid-body is an info line and a count, not the service's error.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const rejected = async (runtime: TestRuntime, reason: string) =>
  (await runtime.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_webhooks_rejected_total')?.values.filter((v) => v.labels.reason === reason).reduce((s, v) => s + v.value, 0) ?? 0

it('a flood of refusals writes one line a second per target and reason, the next saying how many were left out', async () => {
  const logs = captureLogs()
  const clock = createManualClock('2026-03-01T00:00:00Z')
  rt = await createTestRuntime({ clock, log: logs.log })
  const app = new H3()
  registerWebhookRoutes(app, rt)
  const post = (target: string, headers: Record<string, string> = {}) =>
    app.fetch(new Request(`http://localhost/webhooks/${target}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', ...headers } }))
  const long = 'x'.repeat(8_000)
  for (let i = 0; i < 300; i++) expect((await post(`${long}${i}`)).status).toBe(404)
  for (let i = 0; i < 50; i++) expect((await post('formant', { 'x-formantai-signature': 'sha256=00', 'x-formantai-timestamp': String(clock.now() / 1000) })).status).toBe(401)
  expect(await rejected(rt, 'unknown_target')).toBe(300)
  const lines = logs.find(/^webhook rejected/)
  expect(lines.map((l) => l.reason)).toEqual(['unknown_target', 'invalid_signature'])
  expect(String(lines[0]!.msg).length).toBeLessThan(120)
  expect(lines[0]!.msg).toBe(`webhook rejected: no webhook target named "${'x'.repeat(64)}…"`)

  await clock.advance(1_000)
  await post('nope')
  const next = logs.find(/^webhook rejected/)
  expect(next).toHaveLength(3)
  expect(next[2]).toMatchObject({ reason: 'unknown_target', not_logged_since: 299 })
})

it('a sender that hangs up before its body ends is counted and logged at info, not as an error', async () => {
  const logs = captureLogs('debug')
  rt = await createTestRuntime({ log: logs.log })
  const app = new H3()
  registerWebhookRoutes(app, rt)
  const server = serve(app, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
  await server.ready()
  try {
    const port = Number(new URL(server.url!).port)
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.write('POST /webhooks/formant HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"event_id":')
          setImmediate(() => socket.destroy())
        })
        socket.on('close', () => resolve())
      })
    }
    await expect.poll(() => rejected(rt!, 'aborted')).toBe(3)
    expect(logs.find(/aborted by the sender/)).toHaveLength(3)
    expect(logs.lines.filter((l) => Number(l.level) >= 50)).toEqual([])
  } finally {
    await server.close(true)
  }
})

it("doctor's probe, signed with the secret, is answered 200 and is no refusal: not counted, not stored, not a warning", async () => {
  const logs = captureLogs('debug')
  const clock = createManualClock('2026-03-01T00:00:00Z')
  rt = await createTestRuntime({ clock, log: logs.log })
  const app = new H3()
  registerWebhookRoutes(app, rt)
  const secret = rt.config.webhook.secrets[0]!
  const post = (body: string, signWith: string | null = secret) =>
    app.fetch(new Request('http://localhost/webhooks/formant', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-formantai-timestamp': String(clock.now() / 1000), ...(signWith ? { 'x-formantai-signature': signFormant(body, signWith) } : {}) },
    }))
  const answered = await post(DOCTOR_PROBE_BODY)
  expect(answered.status).toBe(200)
  expect(await answered.text()).toBe(DOCTOR_PROBE_ANSWER)
  await webhookState(rt).inbox.flush()
  expect(await rt.store.db.selectFrom('webhook_rejections').selectAll().execute()).toEqual([])
  expect(await rt.store.db.selectFrom('webhook_events').select('event_id').execute()).toEqual([])
  expect((await rt.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_webhooks_rejected_total')?.values ?? []).toEqual([])
  // Nor received: it was, so received no longer added up to accepted, duplicates and rejected.
  expect((await rt.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_webhooks_received_total')?.values ?? []).toEqual([])
  expect(logs.find(/^webhook rejected/)).toEqual([])
  expect(logs.find(/^doctor probe answered/)).toHaveLength(1)

  // Only with the secret: otherwise refused as any delivery is. With another field it is an event, missing its id.
  expect((await post(DOCTOR_PROBE_BODY, 'whsec_someone_else')).status).toBe(401)
  expect((await post(DOCTOR_PROBE_BODY, null)).status).toBe(401)
  expect((await post('{"switchboard_doctor":true,"event_type":"call.completed"}')).status).toBe(400)
  expect((await post('{"switchboard_doctor":"true"}')).status).toBe(400)
  expect(logs.find(/^webhook rejected/).map((l) => l.reason)).toEqual(['invalid_signature', 'missing_signature', 'missing_event_id'])
  expect((await rt.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_webhooks_received_total')?.values.map((v) => v.value)).toEqual([4])
})
