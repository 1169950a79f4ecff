import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterEach, expect, it } from 'vitest'
import { describeEachDialect } from '../helpers/db.ts'
import { MADE_UP, phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

/**
 * DESIGN.md's campaign rules check the do-not-call list "before every call and batch row". A `POST /v1/batch-call`
 * sent through switchboard's `/v1` streamed to the provider as it was: a team using the proxy as a drop-in uploaded
 * its listed numbers, and the provider called them.
 */
function batchForm(csv: string, name = 'spring'): FormData {
  const form = new FormData()
  form.set('agent_id', '101')
  form.set('name', name)
  form.set('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv')
  return form
}

/** The multipart bytes of `form` and their Content-Type, as a client sends them. */
async function encoded(form: FormData): Promise<{ bytes: Uint8Array<ArrayBuffer>; type: string }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form })
  return { bytes: new Uint8Array(await request.arrayBuffer()), type: request.headers.get('content-type')! }
}

describeEachDialect('proxy: a batch uploaded through /v1 is checked against the do-not-call list', (dialect) => {
  let h: ProxyHarness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  const listed = async (phone: string) => h!.rt.store.db.insertInto('dnc').values({ phone, reason: 'asked', source: 'test', added_at: 0 }).execute()
  /** A read through the proxy: the key is then one the provider accepted lately, and an upload asks nothing more of it. */
  const keyAccepted = async () => expect((await h!.request('/v1/batch-calls?agent_id=101')).status).toBe(200)
  const batches = async () => ((await (await h!.direct('/v1/batch-calls?agent_id=101')).json()) as { data: unknown[] }).data.length

  it('a file with listed numbers is refused, naming their rows, and never reaches the provider; the clean file goes as sent', async () => {
    h = await proxyHarness({ dialect, env: { DEFAULT_COUNTRY: 'IN' } })
    await listed('+919876543212')
    // The file's own national form of a listed number, and one listed in dnc.csv only.
    writeFileSync(join(h.rt.config.dataDir, 'dnc.csv'), '+919876543214\n')
    const csv = 'customer_phone,first_name\n+919876543210,Asha\n98765 43212,Ravi\n+919876543213,Meena\n+919876543214,Kiran\n'
    // A key the provider has accepted lately: the refusal then needs nothing of it.
    await keyAccepted()
    const before = h.sandbox.stats().requests
    const refused = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(csv) })
    expect(refused.status).toBe(400)
    expect(refused.headers.get('x-cache')).toBe('BYPASS')
    expect(await refused.json()).toEqual({
      error: {
        type: 'invalid_request',
        message: 'customer_phone is on the do-not-call list (switchboard) in 2 rows (rows 3 and 5) of the file: the batch was not uploaded — take those rows out, or launch the list from a recipe (launchBatch leaves them out)',
      },
    })
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await batches()).toBe(0)

    const clean = 'customer_phone,first_name\n+919876543210,Asha\n+919876543213,Meena\n'
    const created = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(clean) })
    expect(created.status).toBe(200)
    expect((await created.json()).data).toMatchObject({ name: 'spring', agent_id: 101, total_recipients: 2 })
    expect(await batches()).toBe(1)
  })

  // The refusal tells which numbers the team's list holds: a made-up key could probe it, call by call or a file at a time.
  it('a key the provider refuses learns nothing of the list: 401, for a call as for a batch', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543251')
    const upload = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone\n+919876543251\n'), key: MADE_UP })
    expect(upload.status).toBe(401)
    expect(await upload.json()).toEqual({ error: { type: 'authentication_error', message: 'invalid or missing api key' } })
    const call = await h.request('/v1/call', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(phoneCall('+919876543251')), key: MADE_UP })
    expect(call.status).toBe(401)
    expect(await batches()).toBe(0)
    // Nor is its upload read at all (0.28.1): the key is asked about first (refused just now: not even asked), and the
    // connection closes on the 401. A made-up key had the proxy decompress and read up to PROXY_MAX_UPLOAD_BYTES (a 50 KB
    // gzip bomb: 20 MB of rows).
    const form = await encoded(batchForm('customer_phone\n+919876543252\n'))
    const before = h.sandbox.stats().requests
    const unread = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': form.type, 'content-encoding': 'gzip' }, body: form.bytes, key: MADE_UP })
    expect([unread.status, unread.headers.get('connection')]).toEqual([401, 'close'])
    expect(await unread.json()).toEqual({ error: { type: 'authentication_error', message: 'invalid or missing api key' } })
    expect(h.sandbox.stats().requests).toBe(before)
    // Another made-up key is asked about once: its first upload costs one read, and nothing of the body.
    const other = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': form.type, 'content-encoding': 'gzip' }, body: form.bytes, key: `${MADE_UP}_2` })
    expect([other.status, other.headers.get('connection')]).toEqual([401, 'close'])
    expect(h.sandbox.stats().requests).toBe(before + 1)
    // The team's own key is told why.
    expect((await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone\n+919876543251\n') })).status).toBe(400)
    expect((await h.call(phoneCall('+919876543251'))).status).toBe(400)
  })

  it('one listed row is named as such; past ten rows the rest are counted', async () => {
    h = await proxyHarness({ dialect })
    const numbers = Array.from({ length: 14 }, (_, i) => `+9198765${String(40000 + i)}`)
    for (const phone of numbers.slice(0, 12)) await listed(phone)
    const one = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(`customer_phone\n+919876500001\n${numbers[0]}\n`) })
    expect((await one.json()).error.message).toMatch(/^customer_phone is on the do-not-call list \(switchboard\) in row 3 of the file: /)
    const many = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(`customer_phone\n${numbers.join('\n')}\n`) })
    expect((await many.json()).error.message).toMatch(/ in 12 rows \(rows 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 2 more\) of the file: /)
    expect(await batches()).toBe(0)
  })

  it('a compressed upload is checked uncompressed (it goes on as sent: test/proxy/call-accepted.test.ts); an encoding switchboard cannot read is a 415', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543222')
    const bad = await encoded(batchForm('customer_phone\n+919876543221\n+919876543222\n'))
    const refused = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': bad.type, 'content-encoding': 'gzip' }, body: gzipSync(bad.bytes) })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.message).toContain('in row 3 of the file')
    const unknown = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': bad.type, 'content-encoding': 'zstd' }, body: bad.bytes })
    expect(unknown.status).toBe(415)
    expect(await unknown.json()).toEqual({
      error: { type: 'invalid_request', message: 'Content-Encoding "zstd" is not one switchboard reads (gzip, deflate, br), so the batch\'s numbers could not be checked against the do-not-call list: send it uncompressed' },
    })
    const broken = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': bad.type, 'content-encoding': 'gzip' }, body: bad.bytes })
    expect(broken.status).toBe(415)
    expect((await broken.json()).error.message).toMatch(/^the upload's gzip body cannot be decompressed \(.+\), so its numbers could not be checked against the do-not-call list: it was not sent$/)
    expect(await batches()).toBe(0)
  })

  it('a do-not-call file that cannot be read stops batches as it stops calls: 503 saying so', async () => {
    h = await proxyHarness({ dialect })
    mkdirSync(join(h.rt.config.dataDir, 'dnc.csv'))
    const res = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone\n+919876543231\n') })
    expect(res.status).toBe(503)
    expect(await res.json()).toEqual({ error: { type: 'internal_error', message: 'switchboard cannot read its do-not-call file (dnc.csv), so the batch was not uploaded; see its logs' } })
    expect(await batches()).toBe(0)
  })

  it('what is no batch switchboard can read goes on as it is, for the provider to answer', async () => {
    h = await proxyHarness({ dialect })
    // No file, no customer_phone column (nor an alias): the provider's own 400s, as before.
    const noFile = new FormData()
    noFile.set('agent_id', '101')
    noFile.set('name', 'x')
    expect(await (await h.request('/v1/batch-call', { method: 'POST', body: noFile })).json()).toEqual({ error: { type: 'invalid_request', message: 'file is required (a CSV with a customer_phone column)' } })
    expect(await (await h.request('/v1/batch-call', { method: 'POST', body: batchForm('first_name\nAsha\n') })).json()).toEqual({ error: { type: 'invalid_request', message: 'file must contain a customer_phone column' } })
  })

  // The provider reads a batch with commas and the column named customer_phone; a recipe's contacts reader guesses the
  // delimiter from the header and takes the phone column by its aliases. Where the two differed the file went on
  // unchecked (the first reading found "no phone column") or checked the wrong column — and the provider called the listed number.
  it('a file is checked as the provider reads it too: a header with more ";" or tabs than commas, a look-alike column before customer_phone', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543299')
    // A key the provider has accepted lately: the refusals then ask nothing of it.
    expect((await h.request('/v1/batch-calls?agent_id=101')).status).toBe(200)
    const before = h.sandbox.stats().requests
    const files = {
      semicolons: 'customer_phone,notes (best time; language; remarks)\n+919876543299,after 5pm\n',
      tabs: 'customer_phone,name\tsurname\tcity\n+919876543299,Asha\tRao\tPune\n',
      lookalike: 'Customer Phone,customer_phone\n+919876543201,+919876543299\n',
      repeated: 'customer_phone,customer_phone\n+919876543201,+919876543299\n',
    }
    for (const [name, csv] of Object.entries(files)) {
      const res = await h.request('/v1/batch-call', { method: 'POST', body: batchForm(csv, name) })
      expect({ name, status: res.status }).toEqual({ name, status: 400 })
      expect((await res.json()).error.message).toMatch(/^customer_phone is on the do-not-call list \(switchboard\) in row 2 of the file: the batch was not uploaded/)
    }
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await batches()).toBe(0)
    // A semicolon-separated file whose rows are clean still goes (the provider answers for it as it is).
    const clean = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone,notes (best time; language; remarks)\n+919876543201,after 5pm\n') })
    expect(clean.status).toBe(200)
  })

  it('a file switchboard cannot read through — an unclosed quote, binary bytes — is refused, not sent unchecked', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543212')
    await keyAccepted()
    const before = h.sandbox.stats().requests
    // The listed number is in a row before the part the reader gives up on: another reader could call it.
    const unclosed = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone,name\n+919876543212,Asha\n+919876543213,"Ravi\n') })
    expect(unclosed.status).toBe(400)
    expect(unclosed.headers.get('x-cache')).toBe('BYPASS')
    expect((await unclosed.json()).error).toEqual({
      type: 'invalid_request',
      message: expect.stringMatching(/^the uploaded file is not a readable CSV: .*Quote Not Closed.*: its numbers could not be checked against the do-not-call list, so the batch was not uploaded$/),
    })
    const binary = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone\n+919876543212\n\u0000\u0001\u0002') })
    expect(binary.status).toBe(400)
    // What to do is said for an upload (it said to "drop that file in", the batch inbox's words).
    expect((await binary.json()).error.message).toMatch(/^the uploaded file is not a CSV file: it looks like binary data \(it has NUL or control bytes\); export it as "CSV UTF-8" and use that file instead: its numbers could not be checked against the do-not-call list, so the batch was not uploaded$/)
    expect(h.sandbox.stats().requests).toBe(before)
    expect(await batches()).toBe(0)
  })

  it('a multipart body switchboard cannot parse is refused, not sent unchecked', async () => {
    h = await proxyHarness({ dialect })
    await keyAccepted()
    const before = h.sandbox.stats().requests
    const res = await h.request('/v1/batch-call', { method: 'POST', headers: { 'content-type': 'multipart/form-data' }, body: 'customer_phone\n+919876543241\n' })
    expect(res.status).toBe(400)
    expect((await res.json()).error.message).toMatch(/^the upload is not multipart\/form-data switchboard can read \(.+\): its numbers could not be checked against the do-not-call list, so it was not sent$/)
    expect(h.sandbox.stats().requests).toBe(before)
  })

  // A number that does not normalise as written was compared as written, which the list never holds: with an
  // extension or a trailing ";" or "#" the listed number went on to the provider, which may dial the number within.
  it('a listed number written with an extension or a trailing ";" or "#" is refused, for a call as for a batch', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543271')
    for (const phone of ['+91 98765 43271 ext 1', '+919876543271;', '+91 9876543271#', '+919876543271 ext. 5']) {
      const call = await h.call(phoneCall(phone))
      expect([call.status, (await call.json()).error?.type], phone).toEqual([400, 'invalid_request'])
    }
    const upload = await h.request('/v1/batch-call', { method: 'POST', body: batchForm('customer_phone,name\n+91 98765 43271 ext 1,A\n') })
    expect([upload.status, (await upload.json()).error.message]).toEqual([400, expect.stringMatching(/^customer_phone is on the do-not-call list \(switchboard\) in row 2 of the file: /)])
    expect(await batches()).toBe(0)
  })

  // Only the first "file" part was checked, and a part with no filename (a text field to FormData) not at all: a provider
  // reading another part, or reading the text as the CSV, called the listed number.
  it('several "file" parts are refused; a "file" sent as a text field is checked as the CSV it is', async () => {
    h = await proxyHarness({ dialect })
    await listed('+919876543261')
    await keyAccepted()
    const before = h.sandbox.stats().requests
    const two = batchForm('customer_phone\n+919876543260\n')
    two.append('file', new Blob(['customer_phone\n+919876543261\n'], { type: 'text/csv' }), 'more.csv')
    const refused = await h.request('/v1/batch-call', { method: 'POST', body: two })
    expect([refused.status, (await refused.json()).error.message]).toEqual([400, 'the upload has 2 "file" parts: send the batch\'s CSV as one "file" part (switchboard cannot tell which one the provider reads, so none was sent)'])
    expect(h.sandbox.stats().requests).toBe(before)
    const text = new FormData()
    text.set('agent_id', '101')
    text.set('name', 'x')
    text.set('file', 'customer_phone\n+919876543261\n')
    const listedText = await h.request('/v1/batch-call', { method: 'POST', body: text })
    expect([listedText.status, (await listedText.json()).error.message]).toEqual([400, expect.stringMatching(/^customer_phone is on the do-not-call list \(switchboard\) in row 2 of the file: /)])
    expect(await batches()).toBe(0)
  })
})
