import { describe, expect, it } from 'vitest'
import { fmtBytes, fmtCount, fmtDuration } from '../../src/reports/format.ts'
import { rate } from '../../src/reports/figures.ts'

it('fmtDuration rounds the whole duration before splitting it, so the seconds never read 60', () => {
  expect(fmtDuration(119.6)).toBe('2 min 00 s')
  expect(fmtDuration(179.5)).toBe('3 min 00 s')
  expect(fmtDuration(119.4)).toBe('1 min 59 s')
  expect(fmtDuration(65)).toBe('1 min 05 s')
  expect(fmtDuration(3_599.7)).toBe('60 min 00 s')
  // Just under a minute, but a minute once rounded to the tenth shown.
  expect(fmtDuration(59.96)).toBe('1 min 00 s')
  expect(fmtDuration(59.94)).toBe('59.9 s')
  expect(fmtDuration(null)).toBe('—')
})

it('rate rounds the exact fraction half up to one decimal: 203 of 400 is 50.8 %, 201 of 400 is 50.3 %', () => {
  // (part / whole) * 1000 made 507.4999… and 502.4999… of them: 50.7 and 50.2.
  expect(rate(203, 400)).toBe(50.8)
  expect(rate(201, 400)).toBe(50.3)
  expect(rate(1, 3)).toBe(33.3)
  expect(rate(2, 3)).toBe(66.7)
  expect(rate(0, 7)).toBe(0)
  expect(rate(7, 7)).toBe(100)
  expect(rate(1, 0)).toBeNull()
})

describe('fmtCount and fmtBytes', () => {
  it('says one call, not "1 calls"; a zip under a megabyte in KB, not "0.0 MB"', () => {
    expect([fmtCount(0, 'calls'), fmtCount(1, 'calls'), fmtCount(1798, 'rows')]).toEqual(['0 calls', '1 call', '1,798 rows'])
    // Decimal units, as labelled: 6,126,933 bytes is 6.1 MB (it read 5.8, in mebibytes); never "1000 KB".
    expect([fmtBytes(200), fmtBytes(40_960), fmtBytes(999_000), fmtBytes(999_600), fmtBytes(1_000_000), fmtBytes(6_126_933), fmtBytes(14_300_000)]).toEqual(['1 KB', '41 KB', '999 KB', '1.0 MB', '1.0 MB', '6.1 MB', '14.3 MB'])
  })
})
