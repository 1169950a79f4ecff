import { afterEach, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { createApp } from '../../src/server.ts'
import { signFormant } from '../../src/webhooks/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * The event's page, `events show` and its `--json` promise the raw body, and showed it parsed and written again: a
 * 20-digit number rounded (12345678901234567890 → 12345678901234567000), `1.10` as `1.1`, a key given twice once.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const TOKEN = 'an-admin-token-for-raw-bodies'
const body =
  '{"event_id":"evt_raw_1","event_type":"call.completed","timestamp":"2026-01-01T00:00:00Z","data":{"call":{"agent_id":101,"conversation_id":"c_raw_1","status":"completed","to_phone":"+919876543210"},' +
  '"results":{"order_total":12345678901234567890,"price":1.10,"tag":"a","tag":"b","note":"rtl\u202eexe \\u0041"}}}'

it('the event page and events show give the body as it arrived, laid out; --json and the admin API add it as raw_body', async () => {
  rt = await createTestRuntime({ env: { ADMIN_TOKEN: TOKEN } })
  const app = createApp(rt)
  const res = await app.fetch(
    new Request('http://localhost/webhooks/formant', {
      method: 'POST',
      body,
      headers: { 'x-formantai-signature': signFormant(body, 'whsec_test_secret'), 'x-formantai-timestamp': String(Math.floor(rt.clock.now() / 1000)) },
    }),
  )
  expect(res.status).toBe(204)

  const env = { DATA_DIR: rt.dataDir, DATABASE_URL: rt.store.url, WEBHOOK_SECRET: 'whsec_test_secret', LOG_LEVEL: 'silent' }
  const run = async (argv: string[]) => {
    let out = ''
    expect(await main(argv, { env, stdout: (t) => void (out += t), stderr: () => {} })).toBe(0)
    return out
  }
  const shown = await run(['events', 'show', 'evt_raw_1'])
  const laidOut = shown.slice(shown.indexOf('body\n') + 5)
  expect(laidOut).toContain('"order_total": 12345678901234567890,\n')
  expect(laidOut).toContain('"price": 1.10,\n')
  expect(laidOut).toContain('"tag": "a",\n')
  expect(laidOut).toContain('"tag": "b",\n')
  // The override as an escape (as before), the sender's own escape as written.
  expect(laidOut).toContain('"note": "rtl\\u202eexe \\u0041"')
  expect(JSON.parse(await run(['events', 'show', 'evt_raw_1', '--json'])).raw_body).toBe(body)

  const api = await app.fetch(new Request('http://localhost/admin/events/evt_raw_1', { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(((await api.json()) as { data: { raw_body: string } }).data.raw_body).toBe(body)

  const page = await (await app.fetch(new Request('http://localhost/ui/events/evt_raw_1', { headers: { authorization: `Bearer ${TOKEN}` } }))).text()
  expect(page).toContain('&quot;order_total&quot;: 12345678901234567890,')
  expect(page).toContain('&quot;tag&quot;: &quot;a&quot;,')
  expect(page).not.toContain('\u202e')
})
