import { parse } from 'csv-parse/sync'
import { stringify } from 'csv-stringify/sync'
import { describe, expect, it } from 'vitest'
import { csvCell } from '../../src/reports/csv-cell.ts'
import { createLocalTimeFormatter, offsetMs } from '../../src/reports/day-range.ts'

describe('the report CSV’s hand-joined cells', () => {
  const cells = ['', 'plain', 'a,b', 'say "hi"', 'crlf\r\ninside', '"', ',', "'=SUM(A1)", ' padded ', 'José, 日本', 'tab\there', '""']

  it('quote exactly as csv-stringify does with its defaults', () => {
    for (const cell of cells) expect(csvCell(cell) + '\r\n', JSON.stringify(cell)).toBe(stringify([[cell]], { record_delimiter: 'windows' }))
    expect(cells.map(csvCell).join(',') + '\r\n').toBe(stringify([cells], { record_delimiter: 'windows' }))
  })

  it('also quote a lone line feed or carriage return, which a spreadsheet would take for the end of the row', () => {
    // csv-stringify with CRLF records leaves `a\nb` bare; Excel and csv-parse would then split the row.
    const tricky = ['line\nbreak', 'cr\rhere', 'ends\r', ...cells]
    const text = tricky.map(csvCell).join(',') + '\r\n'
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"')
    expect(parse(text, { record_delimiter: '\r\n' })).toEqual([tricky])
    expect(parse(text)).toEqual([tricky])
  })
})

describe('createLocalTimeFormatter', () => {
  /** The plain form: one Date#toISOString per instant, with the zone's offset. */
  const reference = (ms: number, tz: string) => {
    const off = offsetMs(ms, tz)
    const abs = Math.abs(off) / 60_000
    return `${new Date(ms + off).toISOString().slice(0, 19)}${off < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
  }

  it('writes local ISO 8601 with the offset, across DST changes, odd offsets and day boundaries', () => {
    const instants = [
      Date.parse('2026-11-20T18:29:59Z'), Date.parse('2026-11-20T18:30:00Z'), // midnight in Kolkata
      Date.parse('2026-03-08T06:59:59Z'), Date.parse('2026-03-08T07:00:00Z'), // New York springs forward
      Date.parse('2026-11-01T05:59:59Z'), Date.parse('2026-11-01T06:00:00Z'), // and falls back
      0, -1, Date.parse('1969-12-31T23:59:59.999Z'), Date.parse('2026-02-28T23:59:59.500Z'), Date.parse('2028-02-29T12:00:00Z'),
    ]
    for (let i = 0; i < 2000; i++) instants.push(Date.parse('2020-01-01T00:00:00Z') + i * 7_919_113)
    for (const tz of ['Asia/Kolkata', 'America/New_York', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Chatham', 'UTC']) {
      const format = createLocalTimeFormatter(tz)
      for (const ms of instants) expect(format(ms), `${tz} ${ms}`).toBe(reference(ms, tz))
    }
    expect(createLocalTimeFormatter('Asia/Kolkata')(Date.parse('2026-11-20T18:30:00Z'))).toBe('2026-11-21T00:00:00+05:30')
    expect(createLocalTimeFormatter('UTC')(null)).toBe('')
  })
})
