import { parseHttpDate } from '../utils/retry-after.ts'

/**
 * A difference between the provider's clock and this machine's smaller than this is not read as one: the `Date` header
 * has whole seconds only (up to 1 s behind the instant it was written) and the answer takes time on its way.
 */
export const CLOCK_SKEW_IGNORED_MS = 2_000

/**
 * How far the provider's clock is ahead of this machine's (negative: behind), from an answer's `Date` header read at
 * `now`; 0 without a valid header or under CLOCK_SKEW_IGNORED_MS. `X-RateLimit-Reset` (and a `Retry-After` date) are
 * instants on the provider's clock: on a machine whose clock is off — a VM resumed from a pause, a host without NTP —
 * taken as they are, a clock 10 minutes behind read each minute's window as eleven minutes long (the queue sent calls
 * at a tenth of the pace allowed, and waited out a spent window for ten minutes), and one ahead read every window as
 * already over. Both come from the same answer as its `Date`, so the difference between them does not depend on either
 * clock.
 */
export function providerClockOffsetMs(date: string | null, now: number): number {
  if (date === null) return 0
  // As `Headers#get` gives it: its surrounding whitespace already stripped.
  const at = parseHttpDate(date, now)
  if (at === undefined) return 0
  const offset = at - now
  return Math.abs(offset) < CLOCK_SKEW_IGNORED_MS ? 0 : offset
}
