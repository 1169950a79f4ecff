import { randomBytes, randomUUID } from 'node:crypto'

/**
 * Ids shaped as the provider's (../shared/spec/provider-notes.md): `evt_` and 12 hex digits, a conversation id
 * `<uuid v4>_<n>`, a UUID trace id. Benchmarks send these rather than counters: every index keyed by one of them takes
 * its new entries at random places, and a counter's (`trace-1`, `trace-2`, …) all land on the same last page — which
 * made the receiver's insert look half as costly as a real campaign's (measured in the forty-fourth session).
 */
export function providerIds(): { eventId: string; conversationId: string; traceId: string } {
  return { eventId: `evt_${randomBytes(6).toString('hex')}`, conversationId: `${randomUUID()}_1`, traceId: randomUUID() }
}
