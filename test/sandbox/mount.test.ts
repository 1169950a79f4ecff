import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createHmac } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { H3, serve } from 'h3'
import { describe, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { withListenPort } from '../../src/config/load.ts'
import { mountSandbox } from '../../src/sandbox/mount.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime } from '../helpers/runtime.ts'
import { childEnv, spawnCollecting } from '../cli/processes.ts'

describe('sandbox inside switchboard', () => {
  it('answers under /sandbox and delivers signed webhooks to this server’s receiver on the port bound later', async () => {
    const clock = createManualClock('2026-03-18T10:00:00Z')
    const rt = await createTestRuntime({ clock })
    const received: Array<{ signature: string | null; body: string }> = []
    const app = new H3()
    const sandbox = mountSandbox(app, rt)
    expect(sandbox).toBeDefined()
    app.post('/webhooks/formant', async (event) => {
      received.push({ signature: event.req.headers.get('x-formantai-signature'), body: await event.req.text() })
      return new Response(null, { status: 204 })
    })
    const server = serve(app, { port: 0, hostname: '127.0.0.1', silent: true, gracefulShutdown: false })
    try {
      await server.ready()
      const address = server.node?.server?.address()
      rt.config = withListenPort(rt.config, typeof address === 'object' && address ? address.port : 0)
      const res = await fetch(`${rt.config.upstreamBaseUrl}/v1/call`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }),
      })
      expect(res.status).toBe(200)
      expect((await res.json()).data.status).toBe('initiated')
      // Another demo workspace's call (Globex, its own key): its webhooks are not this switchboard's to receive.
      const other = await fetch(`${rt.config.upstreamBaseUrl}/v1/call`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk_test_globex', 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: 201, parameters: [{ name: 'customer_phone', value: '+919876543211' }] }),
      })
      expect(other.status).toBe(200)
      await clock.advance(10 * 60_000)
      await expect.poll(() => received.length).toBe(1)
      // Both calls have ended; the sandbox delivered (or tried) only Acme's.
      expect(sandbox!.stats().conversations).toBe(2)
      expect(sandbox!.deliveries()).toHaveLength(1)
      const { signature, body } = received[0]!
      expect(signature).toBe(`sha256=${createHmac('sha256', 'whsec_test_secret').update(body).digest('hex')}`)
      const event = JSON.parse(body)
      // The recording URL names the proxy's /v1 (this server's origin), the address clients use.
      const origin = rt.config.upstreamBaseUrl.replace(/\/sandbox$/, '')
      expect(event.data.call.recording_url).toBe(`${origin}/v1/conversations/${event.data.call.conversation_id}/recording`)
      const rec = await fetch(`${rt.config.upstreamBaseUrl}/v1/conversations/${event.data.call.conversation_id}/recording`, { headers: { authorization: 'Bearer sk_test_acme' } })
      expect(rec.headers.get('content-type')).toBe('audio/wav')
      const unknown = await fetch(`${rt.config.upstreamBaseUrl}/v2/x`)
      expect(unknown.status).toBe(404)
      expect((await unknown.json()).error.type).toBe('not_found')
    } finally {
      await server.close(true)
      await rt.close()
    }
  })

  it('delivers its webhooks to the address the server listens on: HOST=::1 is reached at [::1], not 127.0.0.1', async () => {
    const clock = createManualClock('2026-03-18T10:00:00Z')
    const rt = await createTestRuntime({ clock, env: { HOST: '::1' } })
    const received: string[] = []
    const app = new H3()
    mountSandbox(app, rt)
    app.post('/webhooks/formant', async (event) => {
      received.push(await event.req.text())
      return new Response(null, { status: 204 })
    })
    const server = serve(app, { port: 0, hostname: rt.config.host, silent: true, gracefulShutdown: false })
    try {
      await server.ready()
      const address = server.node?.server?.address()
      rt.config = withListenPort(rt.config, typeof address === 'object' && address ? address.port : 0)
      expect(rt.config.upstreamBaseUrl).toMatch(/^http:\/\/\[::1\]:\d+\/sandbox$/)
      const res = await fetch(`${rt.config.upstreamBaseUrl}/v1/call`, {
        method: 'POST',
        headers: { authorization: 'Bearer sk_test_acme', 'content-type': 'application/json' },
        body: JSON.stringify({ agent_id: 101, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }),
      })
      expect(res.status).toBe(200)
      await clock.advance(10 * 60_000)
      await expect.poll(() => received.length, { timeout: 5_000 }).toBe(1)
    } finally {
      await server.close(true)
      await rt.close()
    }
  })

  it('is not mounted when a VOICE_API_KEY is set', async () => {
    const rt = await createTestRuntime({ env: { VOICE_API_KEY: 'sk_live_x' } })
    try {
      expect(mountSandbox(new H3(), rt)).toBeUndefined()
    } finally {
      await rt.close()
    }
  })
})

describe('cli sandbox', () => {
  it('refuses bad flags with one line', async () => {
    let err = ''
    const code = await main(['sandbox', '--port', 'abc'], { env: {}, stderr: (t) => (err += t), stdout: () => {} })
    expect(code).toBe(2)
    expect(err).toBe('error: --port must be a whole number (got "abc")\n')
    err = ''
    expect(await main(['sandbox', '--webhook-url', 'ftp://x'], { env: {}, stderr: (t) => (err += t), stdout: () => {} })).toBe(2)
    expect(err).toContain('--webhook-url must be an http(s) URL')
    err = ''
    expect(await main(['sandbox', '--webhook-key', 'sk_test_disabled'], { env: {}, stderr: (t) => (err += t), stdout: () => {} })).toBe(2)
    expect(err).toBe('error: --webhook-key must be a demo key with agents: sk_test_acme or sk_test_globex (got "sk_test_disabled")\n')
    err = ''
    expect(await main(['sandbox', '--webhook-secret', 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0'], { env: {}, stderr: (t) => (err += t), stdout: () => {} })).toBe(2)
    expect(err).toBe('error: --webhook-secret is for the webhooks sent to --webhook-url, and none are sent without it: pass --webhook-url too\n')
    err = ''
    expect(await main(['sandbox', '--webhook-key', 'sk_test_globex'], { env: {}, stderr: (t) => (err += t), stdout: () => {} })).toBe(2)
    expect(err).toBe('error: --webhook-key is for the webhooks sent to --webhook-url, and none are sent without it: pass --webhook-url too\n')
  })

  it('reads switchboard.config.ts like every other command: its WEBHOOK_SECRET signs, its SANDBOX_SPEED applies', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-sandbox-cfg-'))
    const file = join(dir, 'switchboard.config.ts')
    writeFileSync(file, "import { defineConfig } from 'switchboard'\nexport default defineConfig({ WEBHOOK_SECRET: 'whsec_c2VjcmV0', SANDBOX_SPEED: 7 })\n")
    const spawned = spawnCollecting(process.execPath, ['src/bin.mjs', 'sandbox', '--port', '0', '--webhook-url', 'http://127.0.0.1:9/hook'], childEnv({ SWITCHBOARD_CONFIG: file }))
    try {
      // Without the file there is no secret, and --webhook-url is refused (exit 2) before anything listens.
      await expect.poll(() => spawned.stdout() + spawned.stderr(), { timeout: 15_000 }).toMatch(/listening at|error:/)
      expect(spawned.stderr()).toBe('')
      expect(spawned.stdout()).toContain('(speed ×7)')
      expect(spawned.stdout()).toContain("sk_test_acme's calls, every event type → http://127.0.0.1:9/hook (signed")
    } finally {
      spawned.child.kill('SIGTERM')
      await spawned.exited
      rmSync(dir, { recursive: true, force: true })
    }
  })

  // Every demo workspace's calls sent webhooks to --webhook-url: the switchboard there (VOICE_API_KEY=sk_test_acme, as
  // the README pairs them) stored globex's calls and failed their follow-ups with its own key (agent not found).
  it("runs standalone: prints its URL, the demo keys and the webhook target, answers /v1, and sends one workspace's webhooks", async () => {
    const hooks: Array<{ agent_id?: number; type?: string }> = []
    const receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        const event = JSON.parse(body) as { event_type?: string; data?: { call?: { agent_id?: number } } }
        hooks.push({ agent_id: event.data?.call?.agent_id, type: event.event_type })
        res.writeHead(204).end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    const child = spawn(process.execPath, ['src/bin.mjs', 'sandbox', '--port', '0', '--webhook-url', hookUrl, '--webhook-secret', 's3cret'], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, LOG_LEVEL: 'silent', VOICE_API_KEY: '', SWITCHBOARD_CONFIG: 'none', SANDBOX_SPEED: '600' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      let out = ''
      child.stdout.on('data', (c: Buffer) => (out += c.toString()))
      await expect.poll(() => out, { timeout: 15_000 }).toMatch(/listening at (http:\/\/127\.0\.0\.1:\d+)\/v1/)
      const base = /listening at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out)![1]!
      expect(out).toContain('sk_test_acme (agents 101, 102, 103)')
      expect(out).toContain('sk_test_globex (agent 201)')
      expect(out).toContain('sk_test_disabled (disabled: 401)')
      expect(out).toContain(`sk_test_acme's calls, every event type → ${hookUrl} (signed`)
      const res = await fetch(`${base}/v1/conversations`, { headers: { authorization: 'Bearer sk_test_globex' } })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ data: [], has_more: false, total: 0 })
      // globex's call first, then acme's: acme's last event arrives after any of globex's would have.
      for (const [key, agent] of [['sk_test_globex', 201], ['sk_test_acme', 101]] as const) {
        const call = await fetch(`${base}/v1/call`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ agent_id: agent, parameters: [{ name: 'customer_phone', value: '+919876543210' }] }),
        })
        expect(call.status).toBe(200)
      }
      await expect.poll(() => hooks.some((h) => h.type === 'call.completed'), { timeout: 15_000 }).toBe(true)
      expect(hooks.map((h) => h.agent_id)).not.toContain(201)
      expect(new Set(hooks.map((h) => h.agent_id))).toEqual(new Set([101]))
    } finally {
      child.kill('SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
      await new Promise((resolve) => receiver.close(resolve))
    }
  })
})
