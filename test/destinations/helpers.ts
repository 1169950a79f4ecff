import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, vi } from 'vitest'
import { Webhook } from 'standardwebhooks'
import type { Dialect } from '../../src/db/connect.ts'
import type { DestinationConfig, DestinationInput } from '../../src/config/destinations.ts'
import type { Runtime } from '../../src/runtime.ts'
import { startDeliveryWorker, type DeliveryWorker } from '../../src/destinations/worker.ts'
import { registerDestinationRoutes } from '../../src/destinations/index.ts'
import { registerBacklogMetrics } from '../../src/backlog-metrics.ts'
import type { DeliveryWorkerOptions } from '../../src/destinations/worker.ts'
import { drainDue } from '../../src/webhooks/processing.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'

export const DEST_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
export const OLD_SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD'

export interface SinkRequest {
  headers: http.IncomingHttpHeaders
  /** Every header line as sent, names in their case (Node folds duplicates of some names in `headers`). */
  rawHeaders: string[]
  body: string
  at: number
}

/** What a sink does with its nth request (0-based): answer, or take the raw response over. */
export type SinkBehaviour = (n: number, req: http.IncomingMessage, res: http.ServerResponse, body: string) => void

export interface Sink {
  url: string
  requests: SinkRequest[]
  /** Replaces the behaviour for the requests that follow. */
  behave(fn: SinkBehaviour): void
  close(): Promise<void>
}

export const ok: SinkBehaviour = (_n, _req, res) => {
  res.writeHead(204).end()
}

/**
 * Sink behaviours that hold their answers until `count` requests (across the sinks sharing it) have arrived, then
 * give them all at once, so their outcomes land in one group commit (the recorder gathers for 20 ms). Later requests
 * are answered at once.
 */
export function together(count: number): (answer: (res: http.ServerResponse) => void) => SinkBehaviour {
  const held: Array<() => void> = []
  let released = false
  return (answer) => (_n, _req, res) => {
    if (released) return answer(res)
    held.push(() => answer(res))
    if (held.length < count) return
    released = true
    for (const give of held.splice(0)) give()
  }
}

/** A real HTTP server on loopback that records every request. */
export async function startSink(behaviour: SinkBehaviour = ok, path = '/hooks'): Promise<Sink> {
  const requests: SinkRequest[] = []
  let fn = behaviour
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const n = requests.length
      requests.push({ headers: req.headers, rawHeaders: req.rawHeaders, body, at: Date.now() })
      fn(n, req, res, body)
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    behave: (next) => void (fn = next),
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Verifies a request with the official `standardwebhooks` package, as of the moment it was signed. */
export function verifyStandard(request: SinkRequest, secret = DEST_SECRET): unknown {
  const ts = Number(request.headers['webhook-timestamp'])
  const spy = vi.spyOn(Date, 'now').mockReturnValue(ts * 1000)
  try {
    return new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    })
  } finally {
    spy.mockRestore()
  }
}

export function destination(sink: Sink | string, overrides: Partial<DestinationInput> = {}): DestinationInput {
  return {
    name: 'crm',
    url: typeof sink === 'string' ? sink : sink.url,
    secret: DEST_SECRET,
    allowHttp: true,
    timeoutMs: 2_000,
    retryScheduleMs: [1_000, 2_000, 3_000],
    ...overrides,
  }
}

export interface ForwardHarness extends Harness {
  /** The running delivery worker (a test may stop it and put another in its place; `close` stops this one). */
  worker: DeliveryWorker
  /** Receives and processes provider events (the receiver and processing, as in production). */
  ingest(events: ReturnType<typeof makeEvent>[]): Promise<void>
  status(id?: string): Promise<Array<{ id: string; destination: string; event_id: string; status: string; attempts: number; next_attempt_at: number }>>
}

/** The admin token of forwarding harnesses: admin routes always need one. */
export const ADMIN_TOKEN = 'a-long-admin-token-for-destinations'
export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` }

export async function createForwardHarness(
  dialect: Dialect,
  destinations: DestinationInput[],
  options: { env?: Record<string, string>; worker?: DeliveryWorkerOptions } = {},
): Promise<ForwardHarness> {
  const h = await createHarness(dialect, { ALLOW_PRIVATE_DESTINATIONS: '1', DESTINATIONS: JSON.stringify(destinations), ADMIN_TOKEN, ...options.env })
  registerDestinationRoutes(h.app, h.rt)
  // The outbox's gauges, as /metrics has them where processing runs.
  registerBacklogMetrics(h.rt, { role: () => 'all' })
  const worker = startDeliveryWorker(h.rt, options.worker ?? {})
  const closeHarness = h.close
  const harness: ForwardHarness = Object.assign(h, {
    worker,
    async ingest(events: ReturnType<typeof makeEvent>[]) {
      for (const e of events) {
        // A millisecond apart, as real deliveries are: receipt order is delivery order.
        await h.clock.advance(1)
        const res = await h.send(e)
        if (res.status !== 204) throw new Error(`receiver answered ${res.status}`)
      }
      await drainDue(h.rt)
      worker.wake()
    },
    async status(id?: string) {
      let q = h.rt.store.db.selectFrom('destination_deliveries').select(['id', 'destination', 'event_id', 'status', 'attempts', 'next_attempt_at'])
      if (id) q = q.where('id', '=', id)
      return q.orderBy('order_at').orderBy('id').execute()
    },
    async close() {
      // The worker running now: a test may have replaced the first one (a restart with another configuration).
      await harness.worker.stop()
      await closeHarness()
    },
  })
  return harness
}

export { makeEvent }

/** Real HTTP on a shared, busy machine: waits get room (they return as soon as the condition holds). */
export const WAIT = { timeout: 15_000, interval: 20 }

/**
 * After each test, closes the harness `take()` hands over (it should also forget it) and every sink started
 * with the returned function.
 */
export function closedAfterEach(take: () => { close(): Promise<void> } | undefined): (...args: Parameters<typeof startSink>) => Promise<Sink> {
  const sinks: Sink[] = []
  afterEach(async () => {
    await take()?.close()
    for (const s of sinks.splice(0)) await s.close()
  })
  return async (...args) => {
    const s = await startSink(...args)
    sinks.push(s)
    return s
  }
}

/** The event ids a sink received, in order, from its `from`th request on. */
export function sentEventIds(sink: Sink, from = 0): string[] {
  return sink.requests.slice(from).map((r) => (JSON.parse(r.body) as { event_id: string }).event_id)
}

/**
 * The runtime as the service restarted with its destinations changed would have it: the same database, clock and
 * metrics, for a new delivery worker (`startDeliveryWorker`) or a CLI-like call made under the new configuration.
 */
export function reconfigured(rt: Runtime, change: (destination: DestinationConfig) => DestinationConfig): Runtime {
  const config = rt.config
  return { ...rt, config: { ...config, destinations: { ...config.destinations, list: config.destinations.list.map(change) } } }
}
