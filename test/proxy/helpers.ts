import { serveApp } from '../../src/utils/serve-app.ts'
import type { Dialect } from '../../src/db/connect.ts'
import { ALL_EVENTS, createSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts'
import { createApp } from '../../src/server.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createSeededRandom } from '../../src/utils/random.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

export const ACME = 'sk_test_acme'
export const GLOBEX = 'sk_test_globex'
export const DISABLED = 'sk_test_disabled'
export const MADE_UP = 'sk_live_made_up_key'
export const WEBHOOK_SECRET = 'whsec_test_secret'

type Served = ReturnType<typeof serveApp>

export interface ProxyHarness {
  rt: TestRuntime
  /** The proxy runtime's clock (cache ages, key window, idempotency window). */
  clock: ManualClock
  sandbox: Sandbox
  /** The sandbox's own clock (call lifecycle, its limit windows). */
  sandboxClock: ManualClock
  sandboxUrl: string
  proxyUrl: string
  /** GET/POST through the proxy over HTTP with a key (null: no Authorization). */
  request(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>
  call(body: unknown, key?: string): Promise<Response>
  /** The same request straight to the sandbox (to compare bytes). */
  direct(path: string, key?: string): Promise<Response>
  stopSandbox(): Promise<void>
  close(): Promise<void>
}

/**
 * A sandbox provider on its own port and a switchboard (not in sandbox mode) whose upstream it is, both
 * on 127.0.0.1. The sandbox delivers its webhooks to switchboard's receiver, signed with its secret.
 */
export async function proxyHarness(
  options: { dialect?: Dialect; sandbox?: SandboxOptions; env?: Record<string, string>; upstreamUrl?: (sandboxUrl: string) => Promise<string> | string } = {},
): Promise<ProxyHarness> {
  const sandboxClock = createManualClock('2026-03-18T20:53:30Z')
  let proxyUrl = ''
  const sandbox = createSandbox({
    clock: sandboxClock,
    random: createSeededRandom(7),
    speed: 60,
    webhookTargets: () => [
      { name: 'switchboard', url: `${proxyUrl}/webhooks/formant`, secret: WEBHOOK_SECRET, events: ALL_EVENTS, includeTranscript: true, includeRecordingUrl: true, active: true },
    ],
    ...options.sandbox,
  })
  const sandboxServer: Served = serveApp(sandbox.app, { port: 0, hostname: '127.0.0.1' })
  await sandboxServer.ready()
  const sandboxUrl = sandboxServer.url!.replace(/\/$/, '')
  const upstream = options.upstreamUrl ? await options.upstreamUrl(sandboxUrl) : sandboxUrl
  const clock = createManualClock('2026-03-18T20:53:30Z')
  const rt = await createTestRuntime({
    dialect: options.dialect ?? 'sqlite',
    clock,
    random: createSeededRandom(11),
    env: { VOICE_API_KEY: ACME, VOICE_API_BASE_URL: upstream, WEBHOOK_SECRET, UPSTREAM_TIMEOUT_MS: '3000', ...options.env },
  })
  const proxyServer: Served = serveApp(createApp(rt), { port: 0, hostname: '127.0.0.1' })
  await proxyServer.ready()
  proxyUrl = proxyServer.url!.replace(/\/$/, '')
  let sandboxStopped = false

  const request = (path: string, init: RequestInit & { key?: string | null } = {}) => {
    const headers = new Headers(init.headers)
    const key = init.key === undefined ? ACME : init.key
    if (key !== null) headers.set('authorization', `Bearer ${key}`)
    const { key: _k, ...rest } = init
    return fetch(`${proxyUrl}${path}`, { ...rest, headers })
  }
  return {
    rt,
    clock,
    sandbox,
    sandboxClock,
    sandboxUrl,
    proxyUrl,
    request,
    call: (body, key = ACME) =>
      request('/v1/call', { method: 'POST', key, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    direct: (path, key = ACME) => fetch(`${sandboxUrl}${path}`, { headers: { authorization: `Bearer ${key}` } }),
    async stopSandbox() {
      if (sandboxStopped) return
      sandboxStopped = true
      await sandboxServer.close(true)
    },
    async close() {
      await proxyServer.close(true)
      if (!sandboxStopped) await sandboxServer.close(true)
      await sandbox.close()
      await rt.close()
    },
  }
}

export const phoneCall = (phone: string, extra: Record<string, unknown> = {}, agentId = 101) => ({
  agent_id: agentId,
  parameters: [{ name: 'customer_phone', value: phone }],
  ...extra,
})

/** Settles a request whose retries wait on the manual clock, advancing it until the answer is in. */
export async function withClock<T>(clock: ManualClock, pending: Promise<T>, stepMs = 5_000, maxSteps = 400): Promise<T> {
  let done = false
  const result = pending.finally(() => {
    done = true
  })
  for (let i = 0; i < maxSteps && !done; i++) {
    await clock.advance(stepMs)
    await new Promise((r) => setTimeout(r, 2))
  }
  return result
}
