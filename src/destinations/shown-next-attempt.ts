/**
 * A pending delivery's next attempt for people: `now` once its time has come. A replay makes a delivery due at once for
 * every replica and the CLI whatever their clocks (stored as 0): shown as it is stored, that read as a next attempt on
 * 1970-01-01. `--json` and the admin API keep the stored time, which compares as due.
 */
export function shownNextAttempt(iso: string | null, nowMs: number): string | null {
  if (iso === null) return null
  return Date.parse(iso) <= nowMs ? 'now' : iso
}
