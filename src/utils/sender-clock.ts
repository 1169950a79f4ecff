import { parseHttpDate, trimHeaderSpace } from './retry-after.ts'

/**
 * A difference between a sender's clock and this machine's smaller than this is not read as one: the `Date` header
 * has whole seconds only (up to 1 s behind the instant it was written) and the answer takes time on its way.
 */
export const CLOCK_SKEW_IGNORED_MS = 2_000

/**
 * How far the clock of the server that sent an answer is ahead of this machine's (negative: behind), from the answer's
 * `Date` header read at `now`; 0 without a valid header or under CLOCK_SKEW_IGNORED_MS. An instant a server names —
 * the provider's `X-RateLimit-Reset`, a `Retry-After` date from the provider or a destination — is on its clock: on a
 * machine whose clock is off (a VM resumed from a pause, a host without NTP), taken as it is, a clock 10 minutes behind
 * read each minute's rate-limit window as eleven minutes long (the call queue sent calls at a tenth of the pace allowed,
 * and waited out a spent window for ten minutes), and one ahead read every window as already over. The instant and
 * `Date` come from the same answer, so the difference between them does not depend on either clock.
 */
export function senderClockOffsetMs(date: string | null | undefined, now: number): number {
  if (date === null || date === undefined) return 0
  const at = parseHttpDate(trimHeaderSpace(date), now)
  if (at === undefined) return 0
  const offset = at - now
  return Math.abs(offset) < CLOCK_SKEW_IGNORED_MS ? 0 : offset
}
