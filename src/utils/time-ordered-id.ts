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
  // The random bits of a version-4 UUID (xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx; V carries the same variant bits
  // as version 7's), whose source keeps a cache of random bytes: a random.hex() per id drew from the OS each time.
  const v4 = random.uuid()
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${v4.slice(15, 18)}-${v4.slice(19)}`
}
