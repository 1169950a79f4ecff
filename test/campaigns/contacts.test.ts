import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import {
  ContactsError,
  batchCsv,
  prepareContacts,
  readContacts,
  rejectsCsv,
  writeBatchCsv,
  writeRejectsCsv,
  type ContactRow,
} from '../../src/campaigns/index.ts'

const dir = mkdtempSync(join(tmpdir(), 'sb-contacts-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
function file(text: string | Buffer): string {
  const path = join(dir, `c${n++}.csv`)
  writeFileSync(path, text)
  return path
}
async function all(source: Parameters<typeof readContacts>[0]): Promise<ContactRow[]> {
  const rows: ContactRow[] = []
  for await (const r of readContacts(source)) rows.push(r)
  return rows
}

describe('readContacts', () => {
  it('reads a BOM-prefixed file with an aliased phone header, trimmed cells and quoted fields', async () => {
    const path = file(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Mobile , Name,Note\n 9876543210 , "Doe, Jane" ,"said ""hi""\nthen left"\n')]))
    expect(await all(path)).toEqual([{ row: 3, phone: '9876543210', fields: { Name: 'Doe, Jane', Note: 'said "hi"\nthen left' } }])
  })

  it.each(['phone', 'Phone Number', 'MOBILE', 'contact_number', 'Contact-Number', 'msisdn', 'customer_phone', 'Mobile No.', 'Phone No.', ' Cell. '])('takes "%s" as the phone column', async (header) => {
    const rows = await all(file(`${header},name\n9876543210,A\n`))
    expect(rows).toEqual([{ row: 2, phone: '9876543210', fields: { name: 'A' } }])
  })

  it.each(['Telephone', 'Number', 'MSISDN', 'Tel'])('a "Contact" column (a name) does not take the phone column from "%s"', async (header) => {
    const rows = await all(file(`Contact,${header}\nAsha Kumar,9876543210\n`))
    expect(rows).toEqual([{ row: 2, phone: '9876543210', fields: { Contact: 'Asha Kumar' } }])
  })

  it('a list whose only candidate is "Contact" still reads it as the phone column', async () => {
    expect(await all(file('Name,Contact\nAsha,9876543210\n'))).toEqual([{ row: 2, phone: '9876543210', fields: { Name: 'Asha' } }])
  })

  it('prefers customer_phone over an alias, keeping the alias as an ordinary column', async () => {
    const rows = await all(file('phone,customer_phone\n111,9876543210\n'))
    expect(rows[0]).toEqual({ row: 2, phone: '9876543210', fields: { phone: '111' } })
  })

  it('skips empty lines and rows of empty cells, and numbers rows by file line', async () => {
    const rows = await all(file('phone,name\r\n\r\n9876543210,A\r\n,\r\n\r\n9876543211,B\r\n'))
    expect(rows.map((r) => [r.row, r.phone])).toEqual([
      [3, '9876543210'],
      [6, '9876543211'],
    ])
  })

  it.each([
    ['CRLF lines, a CRLF inside a quoted cell', 'phone,note\r\n\r\n111,"two\r\nlines"\r\n\r\n222,x\r\n'],
    ['LF lines, a CRLF inside a quoted cell', 'phone,note\n\n111,"two\r\nlines"\n\n222,x\n'],
    ['LF lines, an LF inside a quoted cell', 'phone,note\n\n111,"two\nlines"\n\n222,x\n'],
  ])('numbers rows by the line they end on whatever the line breaks (%s)', async (_what, text) => {
    expect((await all(file(text))).map((r) => [r.phone, r.row])).toEqual([['111', 4], ['222', 6]])
  })

  it('tolerates short and long rows', async () => {
    const rows = await all(file('phone,a,b\n9876543210\n9876543211,1,2,3\n'))
    expect(rows.map((r) => r.fields)).toEqual([{ a: '', b: '' }, { a: '1', b: '2' }])
  })

  it('reads from a stream or an iterable of chunks (split anywhere, even inside the BOM)', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('phone,name\n9876543210,"A, B"\n')])
    const chunks = [bytes.subarray(0, 2), bytes.subarray(2, 20), bytes.subarray(20)]
    expect(await all(chunks)).toEqual([{ row: 2, phone: '9876543210', fields: { name: 'A, B' } }])
  })

  it('a file without a phone column is a clear error naming the columns found', async () => {
    const path = file('name,email\nA,a@x\n')
    await expect(all(path)).rejects.toThrow(ContactsError)
    await expect(all(path)).rejects.toThrow(/has no phone column: name one "customer_phone" \(or phone, mobile, contact_number, msisdn\); found: name, email/)
  })

  it('an empty file and a missing file are clear errors', async () => {
    await expect(all(file(''))).rejects.toThrow(/is empty: expected a header row/)
    await expect(all(join(dir, 'nope.csv'))).rejects.toThrow(/cannot read .*nope\.csv: no such file/)
  })

  it('an unterminated quote is reported as an unreadable CSV', async () => {
    await expect(all(file('phone,name\n9876543210,"open\n'))).rejects.toThrow(/is not a readable CSV/)
    // Whatever csv-parse's error code (INVALID_OPENING_QUOTE has no CSV_ prefix), a file it refuses is a ContactsError.
    await expect(all(file('phone,name\n9876543210,"Bob" x"\n'))).rejects.toBeInstanceOf(ContactsError)
  })

  it('reads a quote inside an unquoted cell as written (Bob "The Builder", 5\'10")', async () => {
    expect((await all(file('phone,name,height\n9876543210,Bob "The Builder",5\'10"\n9876543211,Ann,\n'))).map((r) => r.fields)).toEqual([
      { name: 'Bob "The Builder"', height: '5\'10"' },
      { name: 'Ann', height: '' },
    ])
  })

  it('reads a semicolon file (Excel where the decimal mark is a comma) and a tab-separated one by their header', async () => {
    expect(await all(file('Phone;Name;Notiz\n+49 30 12345678;Müller, Hans;"a; b"\n'))).toEqual([{ row: 2, phone: '+49 30 12345678', fields: { Name: 'Müller, Hans', Notiz: 'a; b' } }])
    // Excel's "Unicode Text": UTF-16 with a BOM, tab-separated, CRLF.
    const unicodeText = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('phone\tname\r\n9876543210\tJosé, Jr\r\n', 'utf16le')])
    expect(await all(file(unicodeText))).toEqual([{ row: 2, phone: '9876543210', fields: { name: 'José, Jr' } }])
    // A comma file with a semicolon in a cell, and a header split across the first chunks of a stream, stay commas.
    expect(await all(['pho', 'ne,name;x\n9876543210,A;B\n'])).toEqual([{ row: 2, phone: '9876543210', fields: { 'name;x': 'A;B' } }])
  })

  it('blank lines before the header do not hide its delimiter', async () => {
    // Read as comma files, these had "no phone column … found: phone;name" and were parked in failed/.
    expect(await all(file('\nphone;name\n3016000001;Ana\n'))).toEqual([{ row: 3, phone: '3016000001', fields: { name: 'Ana' } }])
    expect(await all(file('\r\n \r\nphone\tname\r\n3016000001\tAna, B\r\n'))).toEqual([{ row: 4, phone: '3016000001', fields: { name: 'Ana, B' } }])
    expect(await all(['\n', '\n', 'phone;na', 'me\n3016000001;Ana\n'])).toEqual([{ row: 4, phone: '3016000001', fields: { name: 'Ana' } }])
  })

  it('a tab-separated file with as many commas as tabs in its header names is read by tabs', async () => {
    expect(await all(file('Phone\tName, First\tName, Last\n9876543210\tBob\tSmith\n'))).toEqual([{ row: 2, phone: '9876543210', fields: { 'Name, First': 'Bob', 'Name, Last': 'Smith' } }])
  })

  it('a first line of a megabyte with no line break is judged by its start (a file that is not a CSV)', async () => {
    const line = `phone,${'x'.repeat(1024 * 1024)}`
    expect(await all([line.slice(0, 70_000), line.slice(70_000), '\n9876543210,a\n'])).toEqual([{ row: 2, phone: '9876543210', fields: { ['x'.repeat(1024 * 1024)]: 'a' } }])
  })

  it('a repeated header keeps both columns, the second numbered, with a warning', async () => {
    const warnings: string[] = []
    const rows: ContactRow[] = []
    for await (const r of readContacts(file('phone,note,note,note_2\n9876543210,VIP,call after 5pm,x\n'), { name: 'leads.csv', onWarning: (w) => warnings.push(w) })) rows.push(r)
    expect(rows[0]!.fields).toEqual({ note: 'VIP', note_2_: 'call after 5pm', note_2: 'x' })
    expect(warnings).toEqual(['leads.csv has two columns named "note": the second is read as "note_2_"'])
    const more: string[] = []
    for await (const _ of readContacts(file('phone,note,note,note\n9876543210,a,b,c\n'), { name: 'leads.csv', onWarning: (w) => more.push(w) })) void _
    expect(more).toEqual(['leads.csv has two columns named "note": the second is read as "note_2"', 'leads.csv has a third column named "note": it is read as "note_3"'])
  })
})

describe('readContacts: encodings and files that are not CSV', () => {
  const latin1 = (text: string) => Buffer.from(text, 'latin1')
  async function read(source: Parameters<typeof readContacts>[0]): Promise<{ rows: ContactRow[]; warnings: string[] }> {
    const rows: ContactRow[] = []
    const warnings: string[] = []
    for await (const r of readContacts(source, { name: 'clientes.csv', onWarning: (w) => warnings.push(w) })) rows.push(r)
    return { rows, warnings }
  }

  it('a Latin-1 (Windows-1252) file is transcoded, with one warning quoting the first affected text', async () => {
    const { rows, warnings } = await read(file(latin1('phone,name,city\n9876543210,José Núñez,São Paulo\n9876543211,Zoë,Köln\n')))
    expect(rows.map((r) => r.fields)).toEqual([{ name: 'José Núñez', city: 'São Paulo' }, { name: 'Zoë', city: 'Köln' }])
    expect(warnings).toEqual([
      'clientes.csv is not UTF-8: 6 bytes were read as Windows-1252 (Latin-1), the first in "José Núñez"; check the names, or save it as "CSV UTF-8"',
    ])
  })

  it('UTF-8 passes untouched, even split inside a character, and a UTF-8 file gets no warning', async () => {
    const bytes = Buffer.from('phone,name\n9876543210,José 日本\n')
    const at = bytes.indexOf(Buffer.from('日')) + 1
    const { rows, warnings } = await read([bytes.subarray(0, at), bytes.subarray(at, at + 1), bytes.subarray(at + 1)])
    expect(rows[0]!.fields).toEqual({ name: 'José 日本' })
    expect(warnings).toEqual([])
  })

  it('one Latin-1 row pasted into a UTF-8 file is mended without garbling the rest', async () => {
    const bytes = Buffer.concat([Buffer.from('phone,name\n9876543210,Jürgen\n'), latin1('9876543211,Mañana\n')])
    const { rows, warnings } = await read(bytes.length ? [bytes] : [])
    expect(rows.map((r) => r.fields.name)).toEqual(['Jürgen', 'Mañana'])
    expect(warnings).toHaveLength(1)
  })

  it('Windows-1252\'s own characters (0x80–0x9F: ’ “ ” € – —) are read as those characters, not control codes', async () => {
    const bytes = Buffer.concat([Buffer.from('phone,name,offer\n9876543210,O'), Buffer.from([0x92]), Buffer.from('Brien,'), Buffer.from([0x80]), Buffer.from('50 '), Buffer.from([0x96]), Buffer.from(' '), Buffer.from([0x93, 0x61, 0x94]), Buffer.from('\n')])
    const { rows } = await read(file(bytes))
    expect(rows[0]!.fields).toEqual({ name: 'O\u2019Brien', offer: '\u20ac50 \u2013 \u201ca\u201d' })
  })

  it('a UTF-16 file with a byte-order mark is read', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('phone,name\r\n9876543210,Zoë\r\n', 'utf16le')])
    const { rows } = await read(file(utf16))
    expect(rows).toEqual([{ row: 2, phone: '9876543210', fields: { name: 'Zoë' } }])
  })

  it('a binary file is refused with one printable line naming what it looks like, never its bytes', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]), Buffer.from('IHDR\x1b[2J\x07')])
    const xlsx = Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(30, 0x14)])
    const noisy = Buffer.from(Array.from({ length: 600 }, (_, i) => (i % 7 === 0 ? 0x1b : 0x41 + (i % 26))))
    for (const [bytes, looks] of [[png, 'a PNG image'], [xlsx, 'a ZIP archive'], [noisy, 'binary data']] as const) {
      const error = await read(file(bytes)).then(() => undefined, (e: Error) => e)
      expect(error).toBeInstanceOf(ContactsError)
      expect(error!.message).toContain(`is not a CSV file: it looks like ${looks}`)
      expect(error!.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]/)
    }
  })

  it('quotes from a garbled header are escaped in the error, not printed raw', async () => {
    const error = await read(file(Buffer.from('na\x1b[31mme,em\x07ail\nA,b\n'))).then(() => undefined, (e: Error) => e)
    expect(error).toBeInstanceOf(ContactsError)
    expect(error!.message).toContain('found: na\\x1b[31mme, em\\x07ail')
  })
})

describe('prepareContacts: normalize, dedupe on E.164, DNC, rejects with row numbers', () => {
  const csv = [
    'phone,name,timezone',
    '9876543210,A,',
    '+91 98765-43210,A again,', // duplicate of row 2 in another spelling
    '+,B,',
    ',C,', // empty phone, other cells present
    '9876543211,D,',
    "'09876543212,E,",
    '12345,F,',
    '+1 (213) 373-4253,G,America/Los_Angeles',
    '00919876543210,H,', // third spelling of row 2
  ].join('\n')

  it('keeps valid first occurrences and reports every other row', async () => {
    const dnc = new Set(['+919876543211'])
    const out = await prepareContacts(file(csv), { defaultCountry: 'IN', dnc: { has: (p) => dnc.has(p), size: dnc.size } })
    expect(out.rows).toEqual([
      { customer_phone: '+919876543210', name: 'A', timezone: '' },
      { customer_phone: '+919876543212', name: 'E', timezone: '' },
      { customer_phone: '+12133734253', name: 'G', timezone: 'America/Los_Angeles' },
    ])
    expect(out.columns).toEqual(['customer_phone', 'name', 'timezone'])
    expect(out.rejects).toEqual([
      { row: 3, raw: '+91 98765-43210', reason: 'duplicate of row 2' },
      { row: 4, raw: '+', reason: 'not a phone number' },
      { row: 5, raw: '', reason: 'phone number is empty' },
      { row: 6, raw: '9876543211', reason: 'on the do-not-call list' },
      { row: 8, raw: '12345', reason: 'not a valid IN number (wrong number of digits)' },
      { row: 10, raw: '00919876543210', reason: 'duplicate of row 2' },
    ])
    expect(out.stats).toEqual({ read: 9, kept: 3, invalid: 3, duplicates: 2, blocked: 1, excluded: 0 })
    expect(out.stats.read).toBe(out.rows.length + out.rejects.length)
  })

  it('exclude: a number the caller names a reason for is rejected with it, after the file\'s own duplicates and the do-not-call list', async () => {
    const elsewhere = new Map([['+919876543210', 'also in a.csv'], ['+919876543211', 'also in a.csv']])
    const dnc = new Set(['+919876543211'])
    const out = await prepareContacts(file('name,phone\nA,9876543210\nA2,+91 98765 43210\nB,9876543211\nC,9876543212\n'), {
      defaultCountry: 'IN',
      dnc: { has: (p) => dnc.has(p), size: dnc.size },
      exclude: (phone) => elsewhere.get(phone),
    })
    expect(out.rows.map((r) => r.customer_phone)).toEqual(['+919876543212'])
    expect(out.rejects).toEqual([
      { row: 2, raw: '9876543210', reason: 'also in a.csv' },
      { row: 3, raw: '+91 98765 43210', reason: 'duplicate of row 2' },
      { row: 4, raw: '9876543211', reason: 'on the do-not-call list' },
    ])
    expect(out.stats).toEqual({ read: 4, kept: 1, invalid: 0, duplicates: 1, blocked: 1, excluded: 1 })
  })

  it('writes the batch CSV with customer_phone first, and a spreadsheet-safe rejects CSV', async () => {
    const out = await prepareContacts(file('name,mobile\n"Doe, J",9876543210\nX,+\n'), { defaultCountry: 'IN' })
    const text = batchCsv(out.rows, out.columns)
    expect(text).toBe('customer_phone,name\n+919876543210,"Doe, J"\n')
    const path = join(dir, 'out.csv')
    expect(await writeBatchCsv(path, out.rows, out.columns)).toBe(1)
    expect(parse(await import('node:fs').then((fs) => fs.readFileSync(path)), { columns: true })).toEqual([{ customer_phone: '+919876543210', name: 'Doe, J' }])
    const rejects = rejectsCsv([...out.rejects, { row: 9, raw: '=HYPERLINK("x")', reason: 'not a phone number' }])
    expect(parse(rejects, { columns: true })).toEqual([
      { row: '3', raw: "'+", reason: 'not a phone number' },
      { row: '9', raw: '\'=HYPERLINK("x")', reason: 'not a phone number' },
    ])
  })

  it('neutralises the rejects CSV as the reports do, full-width formula signs included (Apple Numbers runs them)', async () => {
    const formulas = ['=1+1', '+91 98', '-2', '@SUM(A1)', '\t=1', '\r=1', '＝1+1', '＋91 98', '－2', '＠SUM(A1)']
    const path = join(dir, 'rejects.csv')
    await writeRejectsCsv(path, [...formulas, '91 98', "'=1"].map((raw, i) => ({ row: i + 2, raw, reason: raw })))
    const rows = parse(readFileSync(path), { columns: true }) as Array<{ raw: string; reason: string }>
    expect(rows.map((r) => [r.raw, r.reason])).toEqual([...formulas.map((f) => [`'${f}`, `'${f}`]), ['91 98', '91 98'], ["'=1", "'=1"]])
  })

  it('a batch CSV built from mixed rows has the union of columns, blanks where a row lacks one', () => {
    expect(batchCsv([{ name: 'A', customer_phone: '+919876543210' }, { customer_phone: '+919876543211', city: 'Pune' }])).toBe(
      'customer_phone,name,city\n+919876543210,A,\n+919876543211,,Pune\n',
    )
  })
})
