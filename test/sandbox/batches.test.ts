import { afterEach, describe, expect, it } from 'vitest'
import type { BatchMetrics } from '../../src/upstream/schemas.ts'
import { GLOBEX, harness, type Harness } from './helpers.ts'

let h: Harness
afterEach(async () => h && (await h.sb.close()))

function upload(h: Harness, fields: { agent_id?: string; name?: string; file?: Blob | string; filename?: string }, key?: string) {
  const form = new FormData()
  if (fields.agent_id !== undefined) form.set('agent_id', fields.agent_id)
  if (fields.name !== undefined) form.set('name', fields.name)
  if (fields.file !== undefined) {
    if (typeof fields.file === 'string') form.set('file', fields.file)
    else form.set('file', fields.file, fields.filename ?? 'batch.csv')
  }
  return h.request('/v1/batch-call', { method: 'POST', body: form, ...(key ? { key } : {}) })
}
const csv = (text: string) => new Blob([text], { type: 'text/csv' })

describe('batch calls', () => {
  it.each([
    [{ name: 'n', file: csv('customer_phone\n+911\n') }, 'agent_id is required'],
    [{ agent_id: 'x', name: 'n', file: csv('customer_phone\n+911\n') }, 'agent_id must be an integer'],
    [{ agent_id: '101', file: csv('customer_phone\n+911\n') }, 'name is required'],
    [{ agent_id: '101', name: 'n' }, 'file is required (a CSV with a customer_phone column)'],
    [{ agent_id: '101', name: 'n', file: 'customer_phone\n+911' }, 'file must be an uploaded CSV file, not a text field'],
    [{ agent_id: '101', name: 'n', file: csv('') }, 'file is empty'],
    [{ agent_id: '101', name: 'n', file: csv('\n\n  \n') }, 'file is empty'],
    [{ agent_id: '101', name: 'n', file: csv('phone,name\n+911,A\n') }, 'file must contain a customer_phone column'],
    [{ agent_id: '101', name: 'n', file: csv('customer_phone,name\n') }, 'file has no rows after the header'],
    [{ agent_id: '101', name: 'n', file: csv('customer_phone,name\n+911\n') }, /^file is not a valid CSV/],
    [{ agent_id: '101', name: 'n', file: csv('customer_phone,name\n,A\n') }, 'row 2 has no customer_phone'],
    // Rows are lines as a spreadsheet shows them (where the row ends), as the proxy names them: a blank line, a quoted
    // cell over two lines (\r\n inside it one line, as an editor counts) made this "row 3".
    [{ agent_id: '101', name: 'n', file: csv('customer_phone,name\n+919876543270,A\n\n,B\n') }, 'row 4 has no customer_phone'],
    [{ agent_id: '101', name: 'n', file: csv('customer_phone,name\r\n+919876543270,"A\r\nB"\r\n,C\r\n') }, 'row 4 has no customer_phone'],
    [{ agent_id: '101', name: 'n', file: new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0xff])], { type: 'image/png' }) }, /^file must be a CSV/],
    [{ agent_id: '101', name: 'n', file: new Blob([new Uint8Array([0x63, 0, 0xff, 0xfe, 0x00])]) }, /^file must be a CSV text file/],
    [{ agent_id: '102', name: 'n', file: csv('customer_phone\n+911\n') }, 'agent has no phone number configured'],
    // Past the form's room too: the file's limit, not "request body is larger than 5184 KB".
    [{ agent_id: '101', name: 'n', file: csv(`customer_phone\n${'+919876543210\n'.repeat(400_000)}`) }, 'file is larger than 5 MB'],
  ])('rejects %o with 400', async (fields, message) => {
    h = harness()
    const res = await upload(h, fields)
    expect(res.status).toBe(400)
    const err = (await h.json(res)).error
    expect(err.type).toBe('invalid_request')
    if (typeof message === 'string') expect(err.message).toBe(message)
    else expect(err.message).toMatch(message)
  })

  it('requires multipart and a known agent of the tenant', async () => {
    h = harness()
    const json = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect((await h.json(json)).error.message).toBe('Content-Type must be multipart/form-data')
    const other = await upload(h, { agent_id: '201', name: 'n', file: csv('customer_phone\n+911\n') })
    expect(other.status).toBe(404)
    expect((await h.json(other)).error).toEqual({ message: 'agent not found', type: 'not_found' })
  })

  it('runs pending → in_progress → completed, one call per row behind the concurrency limit, with metrics that add up', async () => {
    h = harness({ maxCalls: 3 })
    const rows = ['+919000000000', '+919000000001', '+919000000005', '+919000000006', '+919000000007', '+919000000008', '+919000000009', '+919000000099']
    const res = await upload(h, { agent_id: '101', name: 'March reminders', file: csv(`customer_phone,customer_name,amount\n${rows.map((p, i) => `${p},Name ${i},${i * 100}`).join('\n')}\n`) })
    expect(res.status).toBe(200)
    const batch = (await h.json(res)).data
    expect(batch).toEqual({
      id: expect.any(Number), name: 'March reminders', agent_id: 101, status: 'pending', total_recipients: 8,
      created_at: '2026-03-18T20:53:30.000Z', scheduled_for: null, updated_at: null,
    })
    const get = async () => (await h.json(await h.request(`/v1/batch-calls/${batch.id}`))).data
    const metrics = async () => (await h.json(await h.request(`/v1/batch-calls/${batch.id}/metrics`))).data
    const check = (m: BatchMetrics) => {
      expect(m.total_processed).toBe(m.completed_count + m.failed_count + m.busy_count + m.no_answer_count + m.socket_failure_count + m.unreachable_count)
      expect(m.total_processed + m.in_progress_count + m.pending_retry_count).toBe(8)
      expect(m.success_count).toBe(m.completed_count)
      expect(m.success_rate).toBeCloseTo((m.success_count / 8) * 100, 2)
    }
    check(await metrics())
    expect((await metrics()).in_progress_count).toBe(8)
    await h.clock.advance(2000 / 60)
    expect((await get()).status).toBe('in_progress')
    expect(h.sb.stats().activeCalls.acme).toBe(3)
    expect(h.sb.stats().queuedCalls.acme).toBe(5)
    let sawPartial = false
    for (let i = 0; i < 100 && (await get()).status !== 'completed'; i++) {
      await h.clock.advance(500)
      const m = await metrics()
      check(m)
      if (m.total_processed > 0 && m.total_processed < 8) sawPartial = true
      expect(h.sb.stats().activeCalls.acme).toBeLessThanOrEqual(3)
    }
    expect(sawPartial).toBe(true)
    expect((await get()).status).toBe('completed')
    const final = await metrics()
    expect(final).toMatchObject({
      completed_count: 2, no_answer_count: 1, busy_count: 1, failed_count: 2 /* failed + telephony_failed */,
      unreachable_count: 1, socket_failure_count: 1, in_progress_count: 0, pending_retry_count: 0,
      total_processed: 8, success_count: 2, success_rate: 25,
    })
    expect(final.avg_duration_seconds).toBeGreaterThan(0)
    // Every column became a parameter.
    const convs = (await h.json(await h.request('/v1/conversations?limit=100'))).data
    expect(convs).toHaveLength(8)
    const completed = convs.find((c: { contact_number: string }) => c.contact_number === '+919000000000')
    const detail = (await h.json(await h.request(`/v1/conversations/${completed.conversation_id}`))).data
    expect(detail.transcript[0].message).toContain('Name 0')
  })

  it('counts platform retries as pending_retry while they wait', async () => {
    h = harness()
    const res = await upload(h, { agent_id: '103', name: 'r', file: csv('customer_phone\n+919000000006\n+919000000000\n') })
    const { id } = (await h.json(res)).data
    await h.clock.advance(2000 / 60 + 5000 / 60 + 1)
    const m = (await h.json(await h.request(`/v1/batch-calls/${id}/metrics`))).data
    expect(m).toMatchObject({ pending_retry_count: 1, busy_count: 0, in_progress_count: 1 })
    for (let i = 0; i < 20; i++) await h.clock.advance(1000)
    const done = (await h.json(await h.request(`/v1/batch-calls/${id}/metrics`))).data
    expect(done).toMatchObject({ pending_retry_count: 0, busy_count: 1, completed_count: 1, total_processed: 2, success_rate: 50 })
    expect((await h.json(await h.request(`/v1/batch-calls/${id}`))).data.status).toBe('completed')
  })

  it('lists batches {data, has_more, total}, newest first, per tenant, and 404s others', async () => {
    h = harness()
    for (const name of ['a', 'b', 'c']) await upload(h, { agent_id: name === 'b' ? '103' : '101', name, file: csv('customer_phone\n+911\n') })
    const list = await h.json(await h.request('/v1/batch-calls?limit=2'))
    expect(list.data.map((b: { name: string }) => b.name)).toEqual(['c', 'b'])
    expect(list).toMatchObject({ has_more: true, total: 3 })
    expect((await h.json(await h.request('/v1/batch-calls?agent_id=103'))).total).toBe(1)
    expect(await h.json(await h.request('/v1/batch-calls', { key: GLOBEX }))).toEqual({ data: [], has_more: false, total: 0 })
    const id = list.data[0].id
    for (const path of [`/v1/batch-calls/${id}`, `/v1/batch-calls/${id}/metrics`]) {
      const res = await h.request(path, { key: GLOBEX })
      expect(res.status).toBe(404)
      expect(await h.json(res)).toEqual({ error: { message: 'batch not found', type: 'not_found' } })
    }
    expect((await h.request('/v1/batch-calls/abc')).status).toBe(404)
  })
})
