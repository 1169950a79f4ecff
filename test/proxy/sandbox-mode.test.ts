import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startServer, type RunningServer } from '../../src/server.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createSilentLogger } from '../../src/utils/logger.ts'
import { openTestStore, type TestStore } from '../helpers/db.ts'

const ACME = { authorization: 'Bearer sk_test_acme' }

/** The service as `npm start` runs it with no VOICE_API_KEY: sandbox at /sandbox, proxy at /v1, on a real port. */
describe('switchboard in sandbox mode', () => {
  let server: RunningServer | undefined
  let store: TestStore | undefined
  let dataDir: string | undefined
  afterEach(async () => {
    await server?.close()
    await store?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
    server = store = dataDir = undefined
  })

  async function start(): Promise<RunningServer> {
    store = await openTestStore('sqlite')
    server = await startServer({
      env: { PORT: '0', DATA_DIR: (dataDir = mkdtempSync(join(tmpdir(), 'sb-mode-'))), DATABASE_URL: store.url, WEBHOOK_SECRET: 'whsec_mode', LOG_LEVEL: 'silent' },
      overrides: { store, skipMigrate: true, log: createSilentLogger(), clock: createManualClock('2026-03-18T10:00:00Z') },
      background: false,
    })
    return server
  }

  it('recording_url in conversations read through the proxy points at the proxy’s /v1, and works there', async () => {
    const s = await start()
    const placed = await fetch(`${s.url}/v1/call`, {
      method: 'POST',
      headers: { ...ACME, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }),
    })
    expect(placed.status).toBe(200)
    const clock = s.rt.clock as ReturnType<typeof createManualClock>
    await clock.advance(10 * 60_000)
    const list = await (await fetch(`${s.url}/v1/conversations`, { headers: ACME })).json()
    const id = list.data[0].conversation_id as string
    const detail = await (await fetch(`${s.url}/v1/conversations/${id}`, { headers: ACME })).json()
    expect(detail.data.status).toBe('completed')
    expect(detail.data.recording_url).toBe(`${s.url}/v1/conversations/${encodeURIComponent(id)}/recording`)
    const recording = await fetch(detail.data.recording_url, { headers: ACME })
    expect(recording.status).toBe(200)
    expect(recording.headers.get('x-cache')).toBe('MISS')
    expect(recording.headers.get('content-type')).toBe('audio/wav')
  })

  it('every answer carries its reason phrase (HTTP/1.1 200 OK, not "200 ")', async () => {
    const s = await start()
    const statusLine = (path: string, headers: Record<string, string> = {}) =>
      new Promise<{ code: number | undefined; message: string | undefined }>((resolve, reject) => {
        const req = httpRequest(`${s.url}${path}`, { headers }, (res) => {
          res.resume()
          res.on('end', () => resolve({ code: res.statusCode, message: res.statusMessage }))
        })
        req.on('error', reject)
        req.end()
      })
    expect(await statusLine('/healthz')).toEqual({ code: 200, message: 'OK' })
    expect(await statusLine('/no-such-page')).toEqual({ code: 404, message: 'Not Found' })
    expect(await statusLine('/v1/conversations')).toEqual({ code: 401, message: 'Unauthorized' })
    expect(await statusLine('/v1/conversations', ACME)).toEqual({ code: 200, message: 'OK' })
    expect(await statusLine('/sandbox/v1/call', ACME)).toEqual({ code: 405, message: 'Method Not Allowed' })
    expect(await statusLine('/v1/conversations/%ff')).toEqual({ code: 400, message: 'Bad Request' })

    // The raw bytes on the wire, as curl -i shows them.
    const head = await new Promise<string>((resolve, reject) => {
      const socket = connect(s.port, '127.0.0.1', () => socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
      let text = ''
      socket.on('data', (chunk) => (text += chunk.toString('latin1')))
      socket.on('end', () => resolve(text))
      socket.on('error', reject)
    })
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
  })
  it('names the path asked for when the embedded sandbox has no such endpoint (it named the path under /sandbox: "GET ")', async () => {
    const s = await start()
    for (const path of ['/sandbox', '/sandbox/', '/sandbox/v1/nowhere']) {
      const res = await fetch(`${s.url}${path}`, { headers: ACME })
      expect(res.status, path).toBe(404)
      expect((await res.json()).error, path).toEqual({ message: `no such endpoint: GET ${path}`, type: 'not_found' })
    }
  })
})
