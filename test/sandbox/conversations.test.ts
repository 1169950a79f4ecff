import { afterEach, describe, expect, it } from 'vitest'
import { wavDurationSeconds } from '../../src/sandbox/wav.ts'
import { GLOBEX, harness, phoneCall, type Harness } from './helpers.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

describe('conversations', () => {
  it('lists newest first with has_more/total, filters by agent, and hides other tenants', async () => {
    h = harness()
    for (const [phone, agent] of [['+911', 101], ['+912', 103], ['+913', 101]] as const) {
      await h.call(phoneCall(phone, {}, agent))
      await h.clock.advance(1000)
    }
    await h.call(phoneCall('+914', {}, 201), GLOBEX)
    const all = await h.json(await h.request('/v1/conversations?limit=2'))
    expect(all.total).toBe(3)
    expect(all.has_more).toBe(true)
    expect(all.data.map((c: { contact_number: string }) => c.contact_number)).toEqual(['+913', '+912'])
    const rest = await h.json(await h.request('/v1/conversations?limit=2&offset=2'))
    expect(rest).toMatchObject({ has_more: false, total: 3 })
    expect(rest.data.map((c: { contact_number: string }) => c.contact_number)).toEqual(['+911'])
    const past = await h.json(await h.request('/v1/conversations?offset=50'))
    expect(past).toEqual({ data: [], has_more: false, total: 3 })
    const only103 = await h.json(await h.request('/v1/conversations?agent_id=103'))
    expect(only103.total).toBe(1)
    expect((await h.json(await h.request('/v1/conversations?agent_id=201'))).total).toBe(0)
    const globexId = (await h.json(await h.request('/v1/conversations', { key: GLOBEX }))).data[0].conversation_id
    const hidden = await h.request(`/v1/conversations/${globexId}`)
    expect(hidden.status).toBe(404)
    expect(await h.json(hidden)).toEqual({ error: { message: 'conversation not found', type: 'not_found' } })
    expect((await h.request(`/v1/conversations/${globexId}/recording`)).status).toBe(404)
  })

  it('list items use epoch-ms timestamps and integer durations', async () => {
    h = harness()
    await h.call(phoneCall('+919876543210'))
    await h.clock.advance(60_000)
    const [item] = (await h.json(await h.request('/v1/conversations'))).data
    expect(Object.keys(item).sort()).toEqual(['agent_id', 'contact_number', 'conversation_id', 'duration_seconds', 'end_timestamp', 'start_timestamp', 'status'])
    expect(item.start_timestamp).toBe(Date.parse('2026-03-18T20:53:30Z'))
    expect(item.end_timestamp).toBeGreaterThan(item.start_timestamp)
    expect(Number.isInteger(item.duration_seconds)).toBe(true)
  })

  it('serves a real, deterministic WAV for completed calls, with byte ranges; 404 for the others', async () => {
    h = harness()
    await h.call(phoneCall('+919876543210'))
    await h.call(phoneCall('+919876543216'))
    await h.clock.advance(60_000)
    const [busy, done] = (await h.json(await h.request('/v1/conversations'))).data
    expect(busy.status).toBe('busy')
    const missing = await h.request(`/v1/conversations/${busy.conversation_id}/recording`)
    expect(missing.status).toBe(404)
    expect(await h.json(missing)).toEqual({ error: { message: 'recording not found', type: 'not_found' } })

    const res = await h.request(`/v1/conversations/${done.conversation_id}/recording`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('audio/wav')
    expect(res.headers.get('accept-ranges')).toBe('bytes')
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect(Number(res.headers.get('content-length'))).toBe(bytes.byteLength)
    const buf = Buffer.from(bytes)
    expect(buf.toString('ascii', 0, 4)).toBe('RIFF')
    expect(buf.readUInt32LE(4)).toBe(bytes.byteLength - 8)
    expect(buf.toString('ascii', 8, 16)).toBe('WAVEfmt ')
    expect(buf.readUInt16LE(20)).toBe(1) // PCM
    expect(wavDurationSeconds(bytes)).toBeGreaterThanOrEqual(2)
    expect(new Set(bytes.subarray(44, 2000)).size).toBeGreaterThan(50) // not silence

    const again = new Uint8Array(await (await h.request(`/v1/conversations/${done.conversation_id}/recording`)).arrayBuffer())
    expect(Buffer.from(again).equals(buf)).toBe(true)

    const ranged = await h.request(`/v1/conversations/${done.conversation_id}/recording`, { headers: { range: 'bytes=100-199' } })
    expect(ranged.status).toBe(206)
    expect(ranged.headers.get('content-range')).toBe(`bytes 100-199/${bytes.byteLength}`)
    expect(Buffer.from(await ranged.arrayBuffer()).equals(buf.subarray(100, 200))).toBe(true)
    const suffix = await h.request(`/v1/conversations/${done.conversation_id}/recording`, { headers: { range: 'bytes=-10' } })
    expect(Buffer.from(await suffix.arrayBuffer()).equals(buf.subarray(bytes.byteLength - 10))).toBe(true)
    const open = await h.request(`/v1/conversations/${done.conversation_id}/recording`, { headers: { range: `bytes=${bytes.byteLength - 1}-` } })
    expect(open.status).toBe(206)
    expect((await open.arrayBuffer()).byteLength).toBe(1)
    const beyond = await h.request(`/v1/conversations/${done.conversation_id}/recording`, { headers: { range: `bytes=${bytes.byteLength}-` } })
    expect(beyond.status).toBe(416)
    expect(beyond.headers.get('content-range')).toBe(`bytes */${bytes.byteLength}`)
    // The error body every error has (spec: "Body shape for all errors").
    expect(beyond.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await beyond.json()).toEqual({ error: { message: `range not satisfiable: the recording is ${bytes.byteLength} bytes`, type: 'invalid_request' } })
  })

  it('keeps a list page fast with 100,000 stored conversations', async () => {
    h = harness()
    h.sb.seedConversations({ apiKey: 'sk_test_acme', agentId: 101, count: 100_000 })
    await h.call(phoneCall('+919876543210', {}, 103))
    const time = async (path: string) => {
      const t0 = performance.now()
      for (let i = 0; i < 50; i++) await (await h.request(path)).arrayBuffer()
      return (performance.now() - t0) / 50
    }
    const first = await time('/v1/conversations?limit=100')
    const deep = await time('/v1/conversations?limit=100&offset=99000')
    const filtered = await time('/v1/conversations?limit=100&agent_id=103')
    const page = await h.json(await h.request('/v1/conversations?limit=100&offset=99950'))
    expect(page.total).toBe(100_001)
    expect(page.data).toHaveLength(51)
    expect(page.has_more).toBe(false)
    expect((await h.json(await h.request('/v1/conversations?agent_id=103'))).total).toBe(1)
    // A page is O(limit): generous bounds for a shared 2-core machine.
    expect(first).toBeLessThan(15)
    expect(deep).toBeLessThan(15)
    expect(filtered).toBeLessThan(15)
  })
})
