import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { isBlocked, loadDncList } from '../../src/campaigns/dnc.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'

/** DATA_DIR/dnc.csv is read however a spreadsheet saved it, and a file that is not a list is never read as an empty one. */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const LIST = 'phone,reason\r\n+919876543210,asked\r\n98765 43211,complaint\r\nAsha (no number),\r\n'

it.each([
  ['UTF-8', Buffer.from(LIST, 'utf8')],
  ['UTF-8 with a byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(LIST, 'utf8')])],
  ['UTF-16 LE ("Unicode Text")', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(LIST, 'utf16le')])],
  ['UTF-16 BE', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(LIST, 'utf16le').swap16()])],
])('a list saved as %s blocks its numbers', async (_encoding, bytes) => {
  rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), bytes)
  const list = await loadDncList(rt)
  expect(list.size).toBe(2)
  expect(list.has('+919876543210')).toBe(true)
  expect(await isBlocked(rt, '+919876543211')).toBe(true)
})

it('a workbook saved as dnc.csv is an error, not an empty list', async () => {
  rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x06, 0x00, 0, 0, 0, 0]))
  await expect(isBlocked(rt, '+919876543210')).rejects.toThrow(/dnc\.csv is not a CSV file: it looks like a ZIP archive/)
})

// The import takes files with no header: the delimiter was taken as the first line's most frequent one, so a first
// reason holding semicolons made the whole file ';'-separated — and no number went on the list.
it('a do-not-call import without a header whose first reason holds semicolons adds every number', async () => {
  rt = await createTestRuntime({ env: { DEFAULT_COUNTRY: 'US' } })
  const { importDncCsv } = await import('../../src/campaigns/dnc.ts')
  expect(await importDncCsv(rt, '+12025550101,asked us to stop; twice; rude\n+12025550102,lawyer\n')).toEqual({ added: 2, existing: 0, errors: [] })
  expect(await importDncCsv(rt, 'phone;reason\n+12025550103;asked, twice\n')).toEqual({ added: 1, existing: 0, errors: [] })
  expect(await importDncCsv(rt, '+12025550104\tsaid no, politely\n')).toEqual({ added: 1, existing: 0, errors: [] })
  expect((await rt.store.db.selectFrom('dnc').select(['phone', 'reason']).orderBy('phone').execute()).map((r) => `${r.phone} ${r.reason}`)).toEqual([
    '+12025550101 asked us to stop; twice; rude',
    '+12025550102 lawyer',
    '+12025550103 asked, twice',
    '+12025550104 said no, politely',
  ])
})

// A first line was always taken for a header: a number there that does not read by DEFAULT_COUNTRY was left off the
// list without the warning every later line gets.
it('a first line with digits that is no number is warned about; a header is not', async () => {
  const logs = captureLogs('warn')
  rt = await createTestRuntime({ log: logs.log, env: { DEFAULT_COUNTRY: 'IN' } })
  writeFileSync(join(rt.dataDir, 'dnc.csv'), '1 (415) 555-0196\n+919876543210\n')
  expect((await loadDncList(rt)).size).toBe(1)
  expect(logs.find(/not a phone number/).map((l) => l.msg)).toEqual([expect.stringMatching(/dnc\.csv: 1 line is not a phone number and not on the do-not-call list, e\.g\. line 1: "1 \(415\) 555-0196" \(/)])
  writeFileSync(join(rt.dataDir, 'dnc.csv'), 'phone number,reason\n+919876543211\n')
  expect((await loadDncList(rt)).size).toBe(1)
  expect(logs.find(/not a phone number/)).toHaveLength(1)
})
