import http from 'node:http'
import { signFormant } from '../../../src/webhooks/verify.ts'

/**
 * A webhook sender that behaves like the provider: signs each body, waits at most 10 s for an answer,
 * and retries anything but a 2xx (a 4xx too: the provider does not tell them apart) after a short pause.
 * It records every answer so a test can check that no 2xx came before the event was stored.
 */
export interface Delivery {
  eventId: string
  status: number
  ms: number
  at: number
}

export interface SendResult {
  sent: number
  acknowledged: Set<string>
  deliveries: Delivery[]
  /** Longest single answer (ms), network errors included. */
  slowestMs: number
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

export function postOnce(port: number, path: string, body: string, headers: Record<string, string>, timeoutMs = 10_000): Promise<number> {
  return new Promise((done) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers }, timeout: timeoutMs },
      (res) => {
        res.resume()
        res.on('end', () => done(res.statusCode ?? 0))
        res.on('error', () => done(0))
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', () => done(0))
    req.end(body)
  })
}

export function signedHeaders(body: string, secret: string): Record<string, string> {
  return { 'x-formantai-signature': signFormant(body, secret), 'x-formantai-timestamp': String(Math.floor(Date.now() / 1000)) }
}

export interface SendOptions {
  port: number
  secret: string
  bodies: Array<{ eventId: string; body: string }>
  lanes: number
  /** Pause before a retry. */
  retryMs?: number
  /** Give up on an event after this long (the test then fails on it). */
  giveUpMs?: number
  /** Stops sending when true (the server process died: retrying would only wait for the timeout). */
  abort?(): boolean
  /** Called after each answer (to trigger a fault mid-burst). */
  onAnswer?(delivery: Delivery, acknowledged: number): void
}

export async function sendWithRetries(options: SendOptions): Promise<SendResult> {
  const acknowledged = new Set<string>()
  const deliveries: Delivery[] = []
  let next = 0
  let slowestMs = 0
  const lane = async () => {
    for (;;) {
      const item = options.bodies[next++]
      if (!item || options.abort?.()) return
      const started = Date.now()
      for (;;) {
        const t0 = Date.now()
        const status = await postOnce(options.port, '/webhooks/formant', item.body, signedHeaders(item.body, options.secret))
        const delivery = { eventId: item.eventId, status, ms: Date.now() - t0, at: Date.now() }
        slowestMs = Math.max(slowestMs, delivery.ms)
        deliveries.push(delivery)
        if (status >= 200 && status < 300) acknowledged.add(item.eventId)
        options.onAnswer?.(delivery, acknowledged.size)
        if (status >= 200 && status < 300) break
        if (Date.now() - started > (options.giveUpMs ?? 60_000) || options.abort?.()) break
        await new Promise((r) => setTimeout(r, options.retryMs ?? 200))
      }
    }
  }
  await Promise.all(Array.from({ length: options.lanes }, lane))
  return { sent: options.bodies.length, acknowledged, deliveries, slowestMs }
}
