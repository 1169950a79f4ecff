import { afterEach, expect, it } from 'vitest'
import { endpointOf } from '../../src/upstream/metrics.ts'
import { proxyHarness, type ProxyHarness } from '../proxy/helpers.ts'

/**
 * `switchboard_upstream_request_seconds` counts every request to the provider — the proxy's and every client's (the
 * call queue, recipes, reconciliation, batch uploads) — by endpoint template and status. It counted only the calls
 * the paced queue sent.
 */
let h: ProxyHarness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

it('names endpoints by the spec\'s templates: an id never becomes a label value', () => {
  expect(endpointOf('GET', '/v1/conversations/conv_123?fields=all')).toBe('GET /v1/conversations/{conversation_id}')
  expect(endpointOf('GET', '/v1/conversations/conv_123/recording')).toBe('GET /v1/conversations/{conversation_id}/recording')
  expect(endpointOf('GET', '/v1/batch-calls/42/metrics')).toBe('GET /v1/batch-calls/{batch_id}/metrics')
  expect(endpointOf('GET', '/v1/transcription/jobs/j1')).toBe('GET /v1/transcription/jobs/{job_id}')
  expect(endpointOf('POST', '/v1/call')).toBe('POST /v1/call')
  expect(endpointOf('GET', '/v1/conversations?page=2')).toBe('GET /v1/conversations')
  expect(endpointOf('GET', '/v1/somewhere/else/entirely')).toBe('GET other')
})

it('counts the proxy\'s requests and a client\'s alike', async () => {
  h = await proxyHarness()
  expect((await h.request('/v1/conversations/conv_nope')).status).toBe(404)
  expect((await h.request('/v1/conversations')).status).toBe(200)
  // A client's request (the workspace key's, as reconciliation and recipes send them).
  await h.rt.workspaceClient().listConversations({})
  // Streamed through (a recording asked for with a query): counted as well.
  expect((await h.request('/v1/conversations/conv_nope/recording?format=mp3')).status).toBe(404)
  const text = await h.rt.metrics.metrics()
  expect(text).toContain('switchboard_upstream_request_seconds_count{endpoint="GET /v1/conversations/{conversation_id}/recording",status="404"} 1')
  expect(text).toContain('switchboard_upstream_request_seconds_count{endpoint="GET /v1/conversations/{conversation_id}",status="404"} 1')
  expect(text).toMatch(/switchboard_upstream_request_seconds_count\{endpoint="GET \/v1\/conversations",status="200"\} 2/)
})
