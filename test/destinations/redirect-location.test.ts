import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { sendOnce } from '../../src/destinations/http-send.ts'
import { deliveryId } from '../../src/destinations/sign.ts'
import { startDeliveryWorker, type DeliveryWorker } from '../../src/destinations/worker.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from '../ui/helpers.ts'
import { deliver, UI_SECRET } from '../ui/seed.ts'
import { runCli } from '../webhooks/helpers.ts'
import { destination, startSink, WAIT, type Sink } from './helpers.ts'

/**
 * A redirect names a URL the sink chose, most often the destination's own again — credentials, a token in the path
 * and in the query. What reaches an error (stored with the attempt, shown by the CLI, the admin API and the
 * dashboard, logged) is shown by the rule every destination URL is shown by.
 */
const SECRETS = ['SECRETQ', 'abc123', 'user:pw', ':pw@']
const PATH = '/hooks/abc123?token=SECRETQ'

function expectNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) expect(text, `${where} shows ${secret}`).not.toContain(secret)
}

describe('a redirect that is not followed', () => {
  let sink: Sink
  let location = ''
  beforeAll(async () => {
    sink = await startSink((_n, _req, res) => res.writeHead(308, { location }).end(), PATH)
  })
  afterAll(() => sink.close())
  const port = () => new URL(sink.url).port
  const send = (followRedirects = 0) =>
    sendOnce({ url: sink.url.replace('http://', 'http://user:pw@'), body: '{}', headers: {}, timeoutMs: 5_000, allowHttp: true, allowPrivate: true, followRedirects, clock: createManualClock() })

  it('names its Location masked: credentials, path segments after the first and query values hidden', async () => {
    location = `https://user:pw@127.0.0.1:${port()}${PATH}`
    expect((await send()).error).toBe(`redirect to https://***@127.0.0.1:${port()}/hooks/…?token=… not followed`)
    // A relative Location is the destination's own URL again: resolved against it, then masked.
    location = PATH
    expect((await send()).error).toBe(`redirect to http://***@127.0.0.1:${port()}/hooks/…?token=… not followed`)
  })

  it('refused as a hop names the redirect, masked, and keeps its status — not the URL configured, which was fine', async () => {
    // The hop's scheme checked as the first address's is (an https destination's redirect to http is refused the same
    // way without allowHttp): the error said "refused ftp:// URL", as if the configuration named it.
    location = `ftp://user:pw@127.0.0.1:${port()}${PATH}`
    const sent = await send(2)
    expect(sent.status).toBe(308)
    expect(sent.error).toBe(`redirect to ftp://***@127.0.0.1:${port()}/… refused: not an http(s) URL`)
    expectNoSecret(sent.error!, 'the error')
  })

  it('names a Location that does not parse by its scheme and host only', async () => {
    location = 'http://user:pw@[not-an-address/hooks/abc123?token=SECRETQ'
    expect((await send(1)).error).toBe('redirect to an invalid URL: http://***@[not-an-address/…')
  })
})

describe('a redirect from a destination on the running service', () => {
  let sink: Sink
  let ui: UiServer
  let worker: DeliveryWorker
  const logs = captureLogs('warn')
  let env: Record<string, string>
  let id = ''

  beforeAll(async () => {
    sink = await startSink((_n, req, res) => res.writeHead(308, { location: `https://user:pw@${req.headers.host}${PATH}` }).end(), PATH)
    const destinations = JSON.stringify([destination(sink.url.replace('http://', 'http://user:pw@'), { retryScheduleMs: [60_000] })])
    ui = await startUiServer({ ADMIN_TOKEN: TOKEN, ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: destinations })
    env = { DATA_DIR: ui.dataDir, WEBHOOK_SECRET: UI_SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0', ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: destinations }
    const eventId = await deliver(ui.server, ui.clock)
    id = deliveryId('crm', eventId)
    await drainDue(ui.server.rt)
    worker = startDeliveryWorker({ ...ui.server.rt, log: logs.log })
    await vi.waitFor(async () => expect(logs.find(/will retry/)).toHaveLength(1), WAIT)
    // The attempt's outcome is recorded after its log line: read by the commands below.
    await vi.waitFor(async () => {
      expect(await ui.server.rt.store.db.selectFrom('destination_deliveries').select('last_error').where('id', '=', id).executeTakeFirst()).toEqual({ last_error: expect.stringMatching(/^redirect to /) })
    }, WAIT)
  }, 60_000)
  afterAll(async () => {
    await worker?.stop()
    await ui?.close()
    await sink?.close()
  })

  it('is stored, shown and logged with its Location masked', async () => {
    const masked = `redirect to https://***@127.0.0.1:${new URL(sink.url).port}/hooks/…?token=… not followed`
    expectNoSecret(JSON.stringify(logs.lines), 'the log')
    expect(logs.find(/will retry/)[0]!.err).toBe(masked)

    const tested = await runCli(['destinations', 'test', 'crm'], env)
    expect(tested.out).toContain(masked)
    expectNoSecret(tested.out + tested.err, 'destinations test')
    const listed = await runCli(['destinations', 'deliveries', '--json'], env)
    expect(listed.out).toContain(masked)
    expectNoSecret(listed.out, 'destinations deliveries')
    const shown = await runCli(['destinations', 'show', id, '--json'], env)
    expect(shown.out).toContain(masked)
    expectNoSecret(shown.out, 'destinations show')

    const admin = await fetch(`${ui.server.url}/admin/destinations/deliveries/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    const adminText = await admin.text()
    expect(admin.status).toBe(200)
    expect(adminText).toContain(masked)
    expectNoSecret(adminText, 'the admin API')

    const { jar } = await login(ui.server.url)
    for (const path of ['/ui/destinations', `/ui/destinations/deliveries/${encodeURIComponent(id)}`]) {
      const page = await (await fetch(`${ui.server.url}${path}`, { headers: { cookie: cookieHeader(jar) } })).text()
      expect(page, path).toContain('redirect to https://***@127.0.0.1:')
      expectNoSecret(page, path)
    }
  })
})
