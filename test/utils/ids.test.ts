import { describe, expect, it } from 'vitest'
import { createSeededRandom, systemRandom } from '../../src/utils/random.ts'
import { timeOrderedId } from '../../src/utils/time-ordered-id.ts'

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('timeOrderedId (UUID version 7)', () => {
  it('carries the time in its first 48 bits, then the version and variant, then randomness', () => {
    const id = timeOrderedId(Date.UTC(2026, 10, 25, 5, 0, 0, 123), createSeededRandom(7))
    expect(id).toMatch(UUID_V7)
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(Date.UTC(2026, 10, 25, 5, 0, 0, 123))
  })

  it('sorts as its times do, as text (what an index on it sees)', () => {
    const random = createSeededRandom(3)
    const start = Date.UTC(2026, 0, 1)
    const ids = Array.from({ length: 500 }, (_, i) => timeOrderedId(start + i * 997, random))
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(500)
  })

  it('differs within one millisecond, and repeats with the same seed (tests stay deterministic)', () => {
    const a = createSeededRandom(9)
    const b = createSeededRandom(9)
    const first = [timeOrderedId(1_000, a), timeOrderedId(1_000, a)]
    expect(first[0]).not.toBe(first[1])
    expect([timeOrderedId(1_000, b), timeOrderedId(1_000, b)]).toEqual(first)
  })

  it('clamps times outside 48 bits instead of producing a malformed id', () => {
    expect(timeOrderedId(-5, createSeededRandom(1))).toMatch(/^00000000-0000-7/)
    expect(timeOrderedId(2 ** 60, createSeededRandom(1))).toMatch(/^ffffffff-ffff-7/)
  })
})

describe('systemRandom.hex (drawn from a pool of OS randomness)', () => {
  it('gives hex of the asked length, never the same bytes twice, across pool refills and beyond the pool size', () => {
    const seen = new Set<string>()
    // 4 KB pools: 3,000 × 8 bytes crosses five refills, and 7-byte draws leave a remainder at each boundary.
    for (let i = 0; i < 3_000; i++) {
      const hex = systemRandom.hex(i % 2 ? 8 : 7)
      expect(hex).toMatch(i % 2 ? /^[0-9a-f]{16}$/ : /^[0-9a-f]{14}$/)
      expect(seen.has(hex)).toBe(false)
      seen.add(hex)
    }
    expect(systemRandom.hex(10_000)).toMatch(/^[0-9a-f]{20000}$/)
    expect(systemRandom.hex(0)).toBe('')
  })
})
