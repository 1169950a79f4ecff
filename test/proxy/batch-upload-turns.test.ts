import { afterEach, expect, it } from 'vitest'
import { screenBatchUpload } from '../../src/proxy/batch-upload.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/**
 * A batch upload is checked on the thread that answers the receiver and every other request. Held in memory, its file
 * was read by promises alone — no turn of the event loop from its first row to its last — so a million-row file (or a
 * 50 KB upload that decompresses to one) held every webhook, health probe and proxied read for seconds.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

it('checking a large batch file gives the event loop a turn every thousand rows or so', async () => {
  rt = await createTestRuntime()
  await rt.store.db.insertInto('dnc').values({ phone: '+919876599999', reason: 'asked', source: 'test', added_at: 0 }).execute()
  const rows = Array.from({ length: 20_000 }, (_, i) => `+9198765${String(10_000 + i)},Asha`)
  const form = new FormData()
  form.set('agent_id', '101')
  form.set('file', new Blob([`customer_phone,name\n${rows.join('\n')}\n+919876599999,Listed\n`], { type: 'text/csv' }), 'big.csv')
  const request = new Request('http://localhost/v1/batch-call', { method: 'POST', body: form })
  let turns = 0
  let screening = true
  const count = () => {
    if (!screening) return
    turns++
    setImmediate(count)
  }
  setImmediate(count)
  const screened = await screenBatchUpload(rt, request)
  screening = false
  expect(screened.ok).toBe(false)
  if (!screened.ok) expect((await screened.reply.json()).error.message).toMatch(/ in row 20002 of the file: /)
  // Two readings of 20,000 rows (as a recipe reads contacts, as the provider reads a batch): ~40 turns, not a handful.
  expect(turns).toBeGreaterThanOrEqual(30)
})
