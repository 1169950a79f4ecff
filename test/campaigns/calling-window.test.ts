import { describe, expect, it } from 'vitest'
import { countryTimeZone, isWithinWindow, nextCallingTime, timeZoneForPhone, zonedTimeToEpoch } from '../../src/campaigns/index.ts'

const at = (iso: string) => Date.parse(iso)
const iso = (ms: number) => new Date(ms).toISOString()

describe('calling window 09:00–21:00 in the recipient’s local time', () => {
  describe('India (Asia/Kolkata, UTC+05:30, one zone)', () => {
    const tz = timeZoneForPhone('+919876543210', { fallback: 'UTC', column: 'America/New_York' })
    it('takes the zone from the number, not from the column', () => expect(tz).toBe('Asia/Kolkata'))
    it.each([
      ['08:59 → moved to 09:00 the same day', '2026-03-10T03:29:00Z', '2026-03-10T03:30:00.000Z'],
      ['08:59:59 → 09:00', '2026-03-10T03:29:59Z', '2026-03-10T03:30:00.000Z'],
      ['09:00 stays', '2026-03-10T03:30:00Z', '2026-03-10T03:30:00.000Z'],
      ['20:59 stays', '2026-03-10T15:29:00Z', '2026-03-10T15:29:00.000Z'],
      ['21:00 → next day 09:00', '2026-03-10T15:30:00Z', '2026-03-11T03:30:00.000Z'],
      ['23:59 → next day 09:00', '2026-03-10T18:29:00Z', '2026-03-11T03:30:00.000Z'],
      ['00:00 local (18:30 UTC the day before) → that local day 09:00', '2026-03-10T18:30:00Z', '2026-03-11T03:30:00.000Z'],
      ['21:00 on the 31st → the 1st of next month', '2026-03-31T15:30:00Z', '2026-04-01T03:30:00.000Z'],
    ])('%s', (_name, input, expected) => {
      expect(iso(nextCallingTime(at(input), tz))).toBe(expected)
    })
  })

  describe('United States (many zones): the timezone column decides', () => {
    const tz = timeZoneForPhone('+12133734253', { fallback: 'Asia/Kolkata', column: 'America/Los_Angeles' })
    it('uses the column', () => expect(tz).toBe('America/Los_Angeles'))
    it.each([
      ['08:59 PDT → 09:00 PDT', '2026-06-10T15:59:00Z', '2026-06-10T16:00:00.000Z'],
      ['09:00 PDT stays', '2026-06-10T16:00:00Z', '2026-06-10T16:00:00.000Z'],
      ['20:59 PDT stays', '2026-06-11T03:59:00Z', '2026-06-11T03:59:00.000Z'],
      ['21:00 PDT → 09:00 PDT next day', '2026-06-11T04:00:00Z', '2026-06-11T16:00:00.000Z'],
    ])('%s', (_name, input, expected) => {
      expect(iso(nextCallingTime(at(input), tz))).toBe(expected)
    })
    it('falls back to the recipe zone without a column, or with a column that is not a zone', () => {
      expect(timeZoneForPhone('+12133734253', { fallback: 'Asia/Kolkata' })).toBe('Asia/Kolkata')
      expect(timeZoneForPhone('+12133734253', { fallback: 'Asia/Kolkata', column: 'Pacific Time' })).toBe('Asia/Kolkata')
    })
  })

  describe('United Kingdom (one zone, with DST)', () => {
    const tz = timeZoneForPhone('+442079460018', { fallback: 'UTC' })
    it('uses Europe/London', () => expect(tz).toBe('Europe/London'))
    it('21:30 GMT on the eve of the spring change → 09:00 BST, which is 08:00 UTC', () => {
      expect(iso(nextCallingTime(at('2026-03-28T21:30:00Z'), tz))).toBe('2026-03-29T08:00:00.000Z')
    })
    it('on the change day itself, 08:59 BST → 09:00 BST; 20:59 BST stays; 21:00 BST moves', () => {
      expect(iso(nextCallingTime(at('2026-03-29T07:59:00Z'), tz))).toBe('2026-03-29T08:00:00.000Z')
      // 08:30 UTC is 09:30 BST: inside, although it would be 08:30 in winter time.
      expect(iso(nextCallingTime(at('2026-03-29T08:30:00Z'), tz))).toBe('2026-03-29T08:30:00.000Z')
      expect(isWithinWindow(at('2026-03-29T19:59:00Z'), tz)).toBe(true)
      expect(iso(nextCallingTime(at('2026-03-29T20:00:00Z'), tz))).toBe('2026-03-30T08:00:00.000Z')
    })
    it('21:00 BST on the eve of the autumn change → 09:00 GMT, which is 09:00 UTC', () => {
      expect(iso(nextCallingTime(at('2026-10-24T20:00:00Z'), tz))).toBe('2026-10-25T09:00:00.000Z')
    })
  })

  it('a wall time inside a DST gap resolves to just after it', () => {
    // 02:30 does not exist in New York on 2026-03-08 (02:00 EST → 03:00 EDT): the first instant after the gap, 03:00 EDT.
    expect(iso(zonedTimeToEpoch({ year: 2026, month: 3, day: 8 }, 150, 'America/New_York'))).toBe('2026-03-08T07:00:00.000Z')
    // 01:30 happens twice on 2026-11-01: the first (EDT) is taken.
    expect(iso(zonedTimeToEpoch({ year: 2026, month: 11, day: 1 }, 90, 'America/New_York'))).toBe('2026-11-01T05:30:00.000Z')
  })

  it('honours a custom window and refuses a malformed one', () => {
    const w = { start: '10:30', end: '18:00' }
    expect(iso(nextCallingTime(at('2026-03-10T04:59:00Z'), 'Asia/Kolkata', w))).toBe('2026-03-10T05:00:00.000Z')
    expect(iso(nextCallingTime(at('2026-03-10T12:30:00Z'), 'Asia/Kolkata', w))).toBe('2026-03-11T05:00:00.000Z')
    expect(() => nextCallingTime(0, 'UTC', { start: '9am', end: '21:00' })).toThrow(/look like "09:00"/)
    expect(() => nextCallingTime(0, 'UTC', { start: '21:00', end: '09:00' })).toThrow(/ends .* before it starts/)
  })

  it('treats countries whose zones share one set of rules as one zone', () => {
    expect(countryTimeZone('DE')).toBe('Europe/Berlin')
    expect(countryTimeZone('US')).toBeUndefined()
    expect(countryTimeZone('AU')).toBeUndefined()
    expect(countryTimeZone('IN')).toBe('Asia/Kolkata')
  })
})

describe('localTime agrees with Intl everywhere, including around every DST change', () => {
  const zones = ['Europe/London', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/St_Johns', 'Pacific/Chatham']
  it.each(zones)('%s', async (tz) => {
    const { localTime } = await import('../../src/campaigns/index.ts')
    const f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
    const intl = (ms: number) => {
      const p = Object.fromEntries(f.formatToParts(ms).filter((x) => x.type !== 'literal').map((x) => [x.type, Number(x.value)]))
      return { year: p.year, month: p.month, day: p.day, hour: p.hour, minute: p.minute, second: p.second }
    }
    const offset = (ms: number) => {
      const l = intl(ms)
      return Date.UTC(l.year!, l.month! - 1, l.day, l.hour, l.minute, l.second) - Math.floor(ms / 1000) * 1000
    }
    const mismatches: string[] = []
    let transitionDays = 0
    const check = (ms: number) => {
      if (JSON.stringify(localTime(ms, tz)) !== JSON.stringify(intl(ms))) mismatches.push(new Date(ms).toISOString())
    }
    const start = Date.parse('2026-01-01T00:00:00Z')
    for (let day = 0; day < 366; day++) {
      const from = start + day * 86_400_000
      if (offset(from) !== offset(from + 86_400_000)) {
        transitionDays++
        // Every minute (and second 59 of it) of a day with a change.
        for (let ms = from; ms < from + 86_400_000; ms += 60_000) {
          check(ms)
          check(ms + 59_000)
        }
      } else for (let ms = from + 1_234_000; ms < from + 86_400_000; ms += 6 * 3_600_000) check(ms)
    }
    expect(mismatches).toEqual([])
    expect(transitionDays).toBe(['Asia/Kolkata', 'Asia/Kathmandu'].includes(tz) ? 0 : 2)
  })
})

describe('a window with an edge in the hour a DST change repeats or skips', () => {
  it('the repeated hour: the next opening is never before the time asked, and may be the hour\'s second occurrence', () => {
    // 06:00Z on 2026-11-01 is 01:00 EST, the second 01:00 in New York; 01:30 EDT (05:30Z) is behind us.
    expect(iso(nextCallingTime(at('2026-11-01T06:00:00Z'), 'America/New_York', { start: '01:30', end: '03:00' }))).toBe('2026-11-01T06:30:00.000Z')
    // Oslo falls back from 03:00 to 02:00: just after 02:45 CEST closed the window, 02:00 CET opens it again.
    expect(iso(nextCallingTime(at('2026-10-25T00:45:00Z'), 'Europe/Oslo', { start: '02:00', end: '02:45' }))).toBe('2026-10-25T01:00:00.000Z')
    // Chatham falls back from 03:45 to 02:45, inside a window open until 03:00: it reopens at the change.
    expect(iso(nextCallingTime(at('2026-04-04T13:15:00Z'), 'Pacific/Chatham', { start: '01:30', end: '03:00' }))).toBe('2026-04-04T14:00:00.000Z')
  })

  it('the skipped hour: an opening in the gap is the first instant after it, and a window wholly inside it waits a day', () => {
    expect(iso(nextCallingTime(at('2026-03-07T12:00:00Z'), 'America/New_York', { start: '02:30', end: '05:00' }))).toBe('2026-03-08T07:00:00.000Z')
    expect(iso(nextCallingTime(at('2026-03-07T12:00:00Z'), 'America/New_York', { start: '02:00', end: '02:45' }))).toBe('2026-03-09T06:00:00.000Z')
  })
})

describe('countries with several zones', () => {
  it('one zone nearly all of the country keeps is the number\'s, unless its column says otherwise; split countries need the column', () => {
    expect(timeZoneForPhone('+34612345678', { fallback: 'Asia/Kolkata' })).toBe('Europe/Madrid')
    expect(timeZoneForPhone('+34612345678', { fallback: 'Asia/Kolkata', column: 'Atlantic/Canary' })).toBe('Atlantic/Canary')
    expect(timeZoneForPhone('+8613912345678', { fallback: 'Asia/Kolkata' })).toBe('Asia/Shanghai')
    expect(timeZoneForPhone('+64211234567', { fallback: 'Asia/Kolkata' })).toBe('Pacific/Auckland')
    // The US is split in earnest: without a column, the recipe's zone.
    expect(timeZoneForPhone('+12125550123', { fallback: 'Asia/Kolkata' })).toBe('Asia/Kolkata')
    // At 09:00 in India a Madrid mobile is not rung (04:30 there): it waits for 09:00 in Madrid.
    expect(iso(nextCallingTime(at('2026-01-15T03:30:00Z'), timeZoneForPhone('+34612345678', { fallback: 'Asia/Kolkata' })))).toBe('2026-01-15T08:00:00.000Z')
  })
})
