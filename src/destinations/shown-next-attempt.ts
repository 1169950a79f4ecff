import type { Runtime } from '../runtime.ts'
import { pausedDestinations } from './pauses.ts'
import { disabledDestinations } from './state.ts'

/**
 * Why a destination's pending deliveries do not go out when due: disabled (until enabled), paused (until when), or
 * removed from DESTINATIONS (never: nothing sends them any more).
 */
export type Hold = { kind: 'disabled' } | { kind: 'paused'; until: number } | { kind: 'removed' }

/** What holds each destination's deliveries back, by name; undefined for one whose deliveries go out when due. */
export interface Holds {
  get(name: string): Hold | undefined
}

/** The destinations whose deliveries wait on something other than their own next attempt. */
export async function heldDestinations(rt: Runtime): Promise<Holds> {
  const held = new Map<string, Hold>()
  for (const name of (await disabledDestinations(rt)).keys()) held.set(name, { kind: 'disabled' })
  for (const [name, pause] of await pausedDestinations(rt)) if (!held.has(name)) held.set(name, { kind: 'paused', until: pause.until })
  const configured = new Set(rt.config.destinations.list.map((d) => d.name))
  return { get: (name) => (configured.has(name) ? held.get(name) : { kind: 'removed' }) }
}

/**
 * A pending delivery's next attempt for people: `now` once its time has come. A replay makes a delivery due at once for
 * every replica and the CLI whatever their clocks (stored as 0): shown as it is stored, that read as a next attempt on
 * 1970-01-01. `--json` and the admin API keep the stored time, which compares as due. A delivery of a destination that
 * is disabled or paused (`hold`) waits for that, not for its time: it read `now` and nothing went out; one of a
 * destination removed from DESTINATIONS is never sent.
 */
export function shownNextAttempt(iso: string | null, nowMs: number, hold?: Hold): string | null {
  if (iso === null) return null
  const at = Date.parse(iso)
  if (hold?.kind === 'removed') return 'never: its destination is no longer configured'
  if (hold?.kind === 'disabled') return 'when the destination is enabled'
  if (hold?.kind === 'paused' && at < hold.until) return `after its pause, ${new Date(hold.until).toISOString()}`
  return at <= nowMs ? 'now' : iso
}
