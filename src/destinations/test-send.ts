import type { Runtime } from '../runtime.ts'
import type { DestinationConfig } from '../config/destinations.ts'
import { sendOnce } from './http-send.ts'
import { deliveryId, eventTypeHeader, signedHeaders, signingKeys } from './sign.ts'

export interface TestSendResult {
  destination: string
  webhook_id: string
  status: number | null
  ok: boolean
  latency_ms: number
  error: string | null
  response: string
}

/**
 * Sends one signed `switchboard.test` event straight to a destination (not through the outbox, nothing
 * retried or recorded), with the same signing, address and redirect rules as real deliveries.
 */
export async function sendTestEvent(rt: Runtime, destination: DestinationConfig): Promise<TestSendResult> {
  const now = rt.clock.now()
  const eventId = `evt_test_${rt.random.hex(8)}`
  const body = JSON.stringify({
    event_id: eventId,
    event_type: 'switchboard.test',
    timestamp: new Date(now).toISOString(),
    data: { message: `test delivery from switchboard to "${destination.name}"` },
  })
  const id = deliveryId(destination.name, eventId)
  const sent = await sendOnce({
    url: destination.url,
    body,
    headers: { ...destination.headers, ...eventTypeHeader('switchboard.test'), ...signedHeaders(signingKeys(destination.secret), id, now, body) },
    timeoutMs: destination.timeoutMs,
    allowPrivate: rt.config.destinations.allowPrivate,
    allowHttp: destination.allowHttp,
    followRedirects: destination.followRedirects,
    clock: rt.clock,
  })
  const ok = sent.status !== null && sent.status >= 200 && sent.status < 300
  return {
    destination: destination.name,
    webhook_id: id,
    status: sent.status,
    ok,
    latency_ms: sent.latencyMs,
    error: ok ? null : (sent.error ?? `HTTP ${sent.status}`),
    response: sent.response,
  }
}
