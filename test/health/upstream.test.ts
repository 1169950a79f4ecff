import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { H3, serve } from 'h3'
import { readiness } from '../../src/health/readiness.ts'
import { UPSTREAM_EVIDENCE_MS } from '../../src/health/upstream-observation.ts'
import { fetchUpstream } from '../../src/proxy/upstream.ts'
import { createManualClock, type ManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { useServeInProcess } from '../helpers/serve-in-process.ts'
import { closedPort } from '../reports/smtp.ts'

/**
 * /readyz's upstream entry follows what this process sees of the provider — the proxy's requests and every
 * provider client the runtime makes (call queue, recipes, reconciliation) — and forgets it after
 * UPSTREAM_EVIDENCE_MS without a fresher request: unknown is not degraded.
 */
let answers: number[] = []
/** The status once `answers` has run out. */
let otherwise = 200
const provider = new H3().all('/**', () => {
  const status = answers.shift() ?? otherwise
  const body = status === 200 ? { data: [], has_more: false, total: 0 } : { error: { message: `status ${status}`, type: status >= 500 ? 'internal_error' : 'invalid_request' } }
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
})
let server: ReturnType<typeof serve>
let providerUrl: string
beforeAll(async () => {
  server = serve(provider, { port: 0, hostname: '127.0.0.1', silent: true })
  await server.ready()
  providerUrl = server.url!.replace(/\/$/, '')
})
afterAll(() => server.close(true))

const runtimes: TestRuntime[] = []
afterEach(async () => {
  for (const rt of runtimes.splice(0)) await rt.close()
})

async function runtime(baseUrl: string, clock: ManualClock): Promise<TestRuntime> {
  const rt = await createTestRuntime({ clock, env: { VOICE_API_KEY: 'sk_live_ready', VOICE_API_BASE_URL: baseUrl, UPSTREAM_TIMEOUT_MS: '1000' } })
  runtimes.push(rt)
  return rt
}

async function upstreamOf(rt: TestRuntime): Promise<{ status: unknown; upstream: unknown }> {
  const { body } = await readiness(rt)
  return { status: body.status, upstream: (body.dependencies as Record<string, string>).upstream }
}

describe('readiness: the upstream entry', () => {
  it('is fed by the provider client (no proxy traffic): 5xx down, 4xx and 429 up, and unknown once the evidence is old', async () => {
    const clock = createManualClock()
    const rt = await runtime(providerUrl, clock)
    const client = rt.workspaceClient({ retry: { retries: 0 } })
    expect(await upstreamOf(rt)).toEqual({ status: 'ready', upstream: expect.stringMatching(/^unknown/) })

    answers = [503]
    await client.listConversations().catch(() => undefined)
    expect(await upstreamOf(rt)).toEqual({ status: 'degraded', upstream: 'down: HTTP 503' })

    // A 429 or a 400 is the provider answering.
    answers = [429]
    await client.listConversations().catch(() => undefined)
    expect(await upstreamOf(rt)).toEqual({ status: 'ready', upstream: 'up' })
    answers = [503, 400]
    await client.listConversations().catch(() => undefined)
    await client.listConversations().catch(() => undefined)
    expect(await upstreamOf(rt)).toEqual({ status: 'ready', upstream: 'up' })

    // Down, then nothing more: degraded for the window, then no longer claimed either way.
    answers = [500]
    await client.listConversations().catch(() => undefined)
    await clock.advance(UPSTREAM_EVIDENCE_MS)
    expect(await upstreamOf(rt)).toEqual({ status: 'degraded', upstream: 'down: HTTP 500' })
    await clock.advance(1)
    expect(await upstreamOf(rt)).toEqual({ status: 'ready', upstream: `unknown: no request to the provider in the last ${UPSTREAM_EVIDENCE_MS / 1000} s` })
  })

  it('marks the provider down when a worker cannot reach it at all', async () => {
    const clock = createManualClock()
    const rt = await runtime(`http://127.0.0.1:${await closedPort()}`, clock)
    await rt.workspaceClient({ retry: { retries: 0 } }).getBatch(1).catch(() => undefined)
    expect(await upstreamOf(rt)).toEqual({ status: 'degraded', upstream: expect.stringMatching(/^down: cannot reach/) })
  })

  it("a proxied 5xx no longer latches: it expires, and the client's successes count as fresh evidence", async () => {
    const clock = createManualClock()
    const rt = await runtime(providerUrl, clock)
    answers = [502]
    const proxied = await fetchUpstream(rt, { method: 'GET', pathAndQuery: '/v1/conversations', apiKey: 'sk_live_ready' })
    expect(proxied.ok && proxied.response.status).toBe(502)
    expect(await upstreamOf(rt)).toMatchObject({ status: 'degraded', upstream: 'down: HTTP 502' })
    await clock.advance(UPSTREAM_EVIDENCE_MS + 1)
    expect(await upstreamOf(rt)).toMatchObject({ status: 'ready', upstream: expect.stringMatching(/^unknown/) })

    answers = [502]
    await fetchUpstream(rt, { method: 'GET', pathAndQuery: '/v1/conversations', apiKey: 'sk_live_ready' })
    answers = [200]
    await rt.workspaceClient().listConversations()
    expect(await upstreamOf(rt)).toMatchObject({ status: 'ready', upstream: 'up' })
  })

  it("reaches /readyz from the processing thread's runtime (serve runs the queue and recipes there)", async () => {
    const clock = createManualClock()
    const main = await runtime(providerUrl, clock)
    // The processing thread's runtime: the same configuration (data folder, database), its own clock and state.
    const thread = await createTestRuntime({ clock: createManualClock(), env: { VOICE_API_KEY: 'sk_live_ready', VOICE_API_BASE_URL: providerUrl } })
    runtimes.push(thread)
    Object.assign(thread.config, { dataDir: main.config.dataDir, databaseUrl: main.config.databaseUrl })
    expect(await upstreamOf(main)).toMatchObject({ upstream: expect.stringMatching(/^unknown/) })

    answers = [500]
    await thread.workspaceClient({ retry: { retries: 0 } }).listConversations().catch(() => undefined)
    await vi.waitFor(async () => expect(await upstreamOf(main)).toEqual({ status: 'degraded', upstream: 'down: HTTP 500' }), { timeout: 2_000, interval: 5 })
  })
})

describe('readiness under serve: processing in its own thread', () => {
  const serveInProcess = useServeInProcess('upstream-ready')
  afterEach(() => {
    otherwise = 200
  })

  it('a request the proxy streams through (a batch upload) marks the provider down when it answers 5xx or cannot be reached', async () => {
    const upload = (server: { url: string }) => {
      const form = new FormData()
      form.set('agent_id', '101')
      form.set('file', new Blob(['customer_phone\n+919876543210\n'], { type: 'text/csv' }), 'b.csv')
      return fetch(`${server.url}/v1/batch-call`, { method: 'POST', headers: { authorization: 'Bearer sk_live_ready' }, body: form })
    }
    const readyz = async (server: { url: string }) => ((await (await fetch(`${server.url}/readyz`)).json()) as { status: string; dependencies: Record<string, string> })
    otherwise = 503
    let server = await serveInProcess.start({ VOICE_API_KEY: 'sk_live_ready', VOICE_API_BASE_URL: providerUrl })
    expect((await upload(server)).status).toBe(503)
    expect(await readyz(server)).toMatchObject({ status: 'degraded', dependencies: { upstream: 'down: HTTP 503' } })
    await server.close()

    server = await serveInProcess.start({ VOICE_API_KEY: 'sk_live_ready', VOICE_API_BASE_URL: `http://127.0.0.1:${await closedPort()}` })
    expect((await upload(server)).status).toBe(502)
    expect(await readyz(server)).toMatchObject({ status: 'degraded', dependencies: { upstream: expect.stringMatching(/^down: cannot reach the provider/) } })
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^switchboard_dependency_up\{dependency="upstream"\} 0$/m)
  }, 20_000)

  // The thread runs on the system clock, so this waits for its first reconciliation (RECONCILE_INTERVAL_SECONDS=1).
  it("the thread's reconciliation failing marks the main thread's /readyz degraded, with no proxy traffic", async () => {
    otherwise = 500
    const server = await serveInProcess.start({ VOICE_API_KEY: 'sk_live_ready', VOICE_API_BASE_URL: providerUrl, RECONCILE_INTERVAL_SECONDS: '1' })
    const upstream = async () => ((await (await fetch(`${server.url}/readyz`)).json()) as { status: string; dependencies: Record<string, string> })
    await vi.waitFor(async () => expect(await upstream()).toMatchObject({ status: 'degraded', dependencies: { upstream: 'down: HTTP 500' } }), { timeout: 10_000, interval: 50 })
  }, 20_000)
})
