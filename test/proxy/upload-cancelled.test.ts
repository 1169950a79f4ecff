import { afterEach, expect, it } from 'vitest'
import { upstreamStatus } from '../../src/health/upstream-observation.ts'
import { createApp } from '../../src/server.ts'
import { ACME, proxyHarness, type ProxyHarness } from './helpers.ts'

let h: ProxyHarness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

// Every failure of a streamed request was noted as the provider's (no answer → "down"), including a caller hanging up
// in the middle of its own upload: one cancelled batch upload showed the provider down, and /readyz degraded, for a
// minute, though the provider never failed.
it("a caller cancelling its own upload is not held against the provider's health", async () => {
  h = await proxyHarness()
  expect((await h.request('/v1/batch-calls')).status).toBeLessThan(500)
  expect(upstreamStatus(h.rt)).toEqual({ state: 'up' })

  let chunks = 0
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (chunks++ < 3) ctl.enqueue(new TextEncoder().encode('x'.repeat(1024)))
      else ctl.error(new Error('client went away'))
    },
  })
  const res = await createApp(h.rt).fetch(
    new Request('http://localhost/v1/batch-calls', {
      method: 'POST',
      headers: { authorization: `Bearer ${ACME}`, 'content-type': 'multipart/form-data; boundary=b' },
      body,
      duplex: 'half',
    } as RequestInit),
  )
  expect(res.status).toBe(400)
  expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/ended before it was whole/)
  expect(upstreamStatus(h.rt)).toEqual({ state: 'up' })
})
