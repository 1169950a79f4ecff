import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import { launchBatch, prepareBatch, prepareContacts, type BatchRow } from '../../src/campaigns/index.ts'
import { MAX_CELL_CHARS, MAX_ROW_CHARS } from '../../src/campaigns/cell-limit.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startRecordingUpstream, uploadedCsv, type RecordingUpstream } from './recording-upstream.ts'

/**
 * What a contact file's cells become: every value reaches the call or is reported (a warning or a reject), whatever
 * the header is called, and nothing a call's webhook could not carry back is uploaded.
 */
const dir = mkdtempSync(join(tmpdir(), 'sb-cells-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
function file(text: string): string {
  const path = join(dir, `c${n++}.csv`)
  writeFileSync(path, text)
  return path
}

describe('prepareContacts: values the header does not name', () => {
  it('cells beyond the header\'s columns are reported in one warning naming the file, the rows and the values', async () => {
    const out = await prepareContacts(file('name,phone\nA,+447911123478,extra,cells\nB,+447911123479\nC,+447911123480,,\nD,+447911123481,more\n'), { name: 'ragged.csv' })
    expect(out.rows).toEqual([
      { customer_phone: '+447911123478', name: 'A' },
      { customer_phone: '+447911123479', name: 'B' },
      { customer_phone: '+447911123480', name: 'C' },
      { customer_phone: '+447911123481', name: 'D' },
    ])
    // Empty trailing cells (`C,…,,`, a spreadsheet's habit) are nothing lost; rows 2 and 5 are.
    expect(out.warnings).toEqual([
      'ragged.csv has cells beyond its header\'s 2 columns in 2 rows (rows 2 and 5; row 2: "extra", "cells"): they are not passed to the calls; name those columns in the header to keep them',
    ])
  })

  it('values under a header cell left empty are reported, naming the column\'s position', async () => {
    const out = await prepareContacts(file('name,,phone\nA,x,+447911123464\nB,,+447911123465\n'), { name: 'gap.csv' })
    expect(out.rows).toEqual([{ customer_phone: '+447911123464', name: 'A' }, { customer_phone: '+447911123465', name: 'B' }])
    expect(out.warnings).toEqual(['gap.csv has a column with no name (column 2) holding values in 1 row (row 2: "x"): they are not passed to the calls; name the column in the header to keep them'])
  })

  it('a header\'s empty column with no values (a trailing comma) is no warning', async () => {
    const out = await prepareContacts(file('name,phone,\nA,+447911123464,\n'), { name: 'trailing.csv' })
    expect(out.warnings).toEqual([])
  })

  it('quotes what was dropped safely: control characters escaped, long values cut, a few rows named', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => `R${i},+4479111234${60 + i},"bad\u001b[31m${'y'.repeat(100)}"`).join('\n')
    const [warning] = (await prepareContacts(file(`name,phone\n${rows}\n`), { name: 'x.csv' })).warnings
    expect(warning).toMatch(/^x\.csv has cells beyond its header's 2 columns in 6 rows \(rows 2, 3, 4 and 3 more; row 2: "bad\\u001b\[31my+…"\)/)
    expect(warning).toMatch(/^[\x20-\x7e…]+$/)
  })

  it('a "__proto__" column is kept like any other, beside "constructor" and "toString"', async () => {
    const out = await prepareContacts(file('name,__proto__,constructor,phone,toString\nA,P,C,+447911123464,T\n'))
    expect(out.columns).toEqual(['customer_phone', 'name', '__proto__', 'constructor', 'toString'])
    expect(Object.entries(out.rows[0]!)).toEqual([['customer_phone', '+447911123464'], ['name', 'A'], ['__proto__', 'P'], ['constructor', 'C'], ['toString', 'T']])
    expect(out.warnings).toEqual([])
  })
})

describe('prepareContacts: cells too long for a call', () => {
  it(`a row with a cell over ${MAX_CELL_CHARS} characters is rejected, naming the column and the limit`, async () => {
    const big = 'x'.repeat(1024 * 1024)
    const out = await prepareContacts(file(`name,phone,notes\nA,+447911123464,${big}\nB,+447911123465,${'y'.repeat(MAX_CELL_CHARS)}\nC,+447911123464,short\n`))
    expect(out.rows.map((r) => r.name)).toEqual(['B', 'C'])
    expect(out.rejects).toEqual([{ row: 2, raw: '+447911123464', reason: `the "notes" cell holds 1048576 characters; at most ${MAX_CELL_CHARS} go to a call (the call's webhooks carry every parameter back)` }])
    expect(out.stats).toEqual({ read: 3, kept: 2, invalid: 1, duplicates: 0, blocked: 0, excluded: 0 })
  })
  it(`a row whose cells hold more than ${MAX_ROW_CHARS} characters together is rejected, each cell within the limit`, async () => {
    const columns = Array.from({ length: 12 }, (_, i) => `c${i}`)
    const wide = columns.map(() => 'w'.repeat(MAX_CELL_CHARS)).join(',')
    const narrow = columns.map(() => 'n').join(',')
    const out = await prepareContacts(file(`phone,${columns.join(',')}\n+447911123464,${wide}\n+447911123465,${narrow}\n`))
    expect(out.rows.map((r) => r.customer_phone)).toEqual(['+447911123465'])
    expect(out.rejects).toEqual([{ row: 2, raw: '+447911123464', reason: `the row's columns hold ${12 * (MAX_CELL_CHARS + 2) + 2} characters together (names and values); at most ${MAX_ROW_CHARS} go to a call (the call's webhooks carry every parameter back)` }])
  })
})

describe('launchBatch', () => {
  let rt: TestRuntime
  let upstream: RecordingUpstream
  beforeEach(async () => {
    upstream = await startRecordingUpstream()
    // 15:13 UTC: inside the calling window in the UK and in New York.
    rt = await createTestRuntime({ clock: createManualClock('2026-11-30T15:13:00Z'), env: { DEFAULT_COUNTRY: 'GB', RECIPES_TIMEZONE: 'America/New_York', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: upstream.url } })
  })
  afterEach(async () => {
    await rt.close()
    await upstream.close()
  })
  const effects = () => ({ dryRun: false, plan: [] })

  it('uploads a "__proto__" column with its values, and blanks (not "[object Object]") where a row lacks "constructor"', async () => {
    const prepared = await prepareBatch(rt, [Buffer.from('name,__proto__,phone,toString\nA,P,+447911123464,T\n')])
    const fromCode: BatchRow = { customer_phone: '+447911123465', name: 'B', constructor: 'C' }
    await launchBatch(rt, { agentId: 101, name: 'protos', rows: [...prepared.rows, fromCode], columns: [...prepared.columns, 'constructor'] }, effects())
    const uploaded = parse(uploadedCsv(upstream.requests[0]!)) as string[][]
    expect(uploaded).toEqual([
      ['customer_phone', 'name', '__proto__', 'toString', 'constructor', 'campaign'],
      ['+447911123464', 'A', 'P', 'T', '', 'protos'],
      ['+447911123465', 'B', '', '', 'C', 'protos'],
    ])
  })

  it('rejects a row given in code with a cell over the limit, naming the column', async () => {
    const result = await launchBatch(rt, { agentId: 101, name: 'big', rows: [{ customer_phone: '+447911123464', notes: 'z'.repeat(MAX_CELL_CHARS + 1) }, { customer_phone: '+447911123465', notes: 'ok' }] }, effects())
    expect(result.rows.map((r) => r.customer_phone)).toEqual(['+447911123465'])
    expect(result.rejects).toEqual([{ row: 1, raw: '+447911123464', reason: `the "notes" cell holds ${MAX_CELL_CHARS + 1} characters; at most ${MAX_CELL_CHARS} go to a call (the call's webhooks carry every parameter back)` }])
    expect(uploadedCsv(upstream.requests[0]!)).not.toContain('zzzz')
  })

  // A row keyed `phone` was rejected as "phone number is empty", which hid that the key was the wrong one.
  it('a row given in code without customer_phone is rejected naming the key and the columns it has', async () => {
    const rows = [{ phone: '+447911123466', name: 'A' }, { customer_phone: '+447911123467', name: 'B' }] as unknown as BatchRow[]
    const result = await launchBatch(rt, { agentId: 101, name: 'keys', rows }, effects())
    expect(result.rows.map((r) => r.customer_phone)).toEqual(['+447911123467'])
    expect(result.rejects).toEqual([{ row: 1, raw: '', reason: 'the row has no "customer_phone" (its columns: "phone", "name"): rows given to launchBatch are keyed by customer_phone' }])
  })

  it('a timezone value that is not a zone is named as such (quoted, escaped, a few), not as a missing column', async () => {
    const prepared = await prepareBatch(rt, [Buffer.from('name,phone,timezone\nA,+1 212 555 0123,<script>\nB,+1 213 555 0100,Mars/Phobos\nC,+1 415 555 0100,"a""b\u001b"\nD,+1 312 555 0100,Mars/Phobos\nE,+1 646 555 0100,Nowhere\nF,+1 202 555 0100,\n')])
    const result = await launchBatch(rt, { agentId: 101, name: 'zones', rows: prepared.rows }, effects())
    expect(result.rows).toHaveLength(6)
    expect(result.warnings).toEqual([
      'batch rows of countries with several time zones have no timezone column (US: 1): their calling window is taken in America/New_York; add a timezone column to call each in their own',
      'batch rows of countries with several time zones have a timezone value that is not a time zone (US: 5; "<script>", "Mars/Phobos", "a\\"b\\u001b" and 1 more): their calling window is taken in America/New_York; write an IANA zone such as "America/Chicago" (or EST, CT, PT…) to call each in their own',
    ])
  })

  it('a batch name\'s control characters become spaces and a long name is cut to 200 characters', async () => {
    const dirty = await launchBatch(rt, { agentId: 101, name: 'new\r\nline\u001b[31m-2026-11-30', rows: [{ customer_phone: '+447911123464' }] }, effects())
    expect(dirty.batch?.name).toBe('new line [31m-2026-11-30')
    const long = await launchBatch(rt, { agentId: 101, name: 'L'.repeat(300), rows: [{ customer_phone: '+447911123465' }] }, effects())
    expect(long.batch?.name).toBe('L'.repeat(200))
  })
})
