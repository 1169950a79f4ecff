import type { Clock } from '../utils/clock.ts'
import { cronFor } from './validate.ts'

export interface ScheduleEntry {
  name: string
  pattern: string
  timezone: string
}

export interface Scheduler {
  /** Replaces the whole set (after a reload); unchanged entries keep their pending tick. */
  set(entries: ScheduleEntry[]): void
  /** The next tick of a scheduled recipe (epoch ms). */
  nextRun(name: string): number | undefined
  stop(): void
}

/**
 * Waits are cut into slices of a minute: Node's timers do not count the time a machine is suspended (nor see the wall
 * clock stepped forward), so a tick armed before a 50-minute sleep fired 50 minutes late with hour-long slices — a
 * daily 08:00 run at 08:50. A slice also keeps clear of Node's 2^31-1 ms setTimeout limit.
 */
export const MAX_WAIT_MS = 60_000

/**
 * Ticks around an instant: the latest at or before it (`prev`) and the first after it (`next`), so that for every
 * instant in [prev, next) the answers are the same. The engine asks about every schedule every minute (its catch-up
 * sweep) and the scheduler at every arm; each croner answer costs 40–80 µs and parsing the pattern as much again, so
 * the last window of each schedule is kept and most questions are answered without croner.
 */
interface TickWindow {
  cron: ReturnType<typeof cronFor>
  /** Undefined before the first question, or when the pattern has no tick before the window's instant. */
  prev?: number
  next?: number
  /** The instant the window was computed at: it holds for [prev ?? at, next ?? Infinity). */
  at?: number
}
const windows = new Map<string, TickWindow>()
/** Schedules are few; a folder churned through many patterns just starts the memo afresh. */
const MAX_WINDOWS = 1_000

function windowAt(pattern: string, timezone: string, at: number): TickWindow {
  const key = `${timezone}\0${pattern}`
  let window = windows.get(key)
  if (!window) {
    if (windows.size >= MAX_WINDOWS) windows.clear()
    window = { cron: cronFor(pattern, timezone) }
    windows.set(key, window)
  }
  const holds = window.at !== undefined && (window.prev ?? window.at) <= at && at < (window.next ?? Infinity)
  if (!holds) {
    window.at = at
    window.prev = window.cron.previousRuns(1, new Date(at + 1))[0]?.getTime()
    window.next = window.cron.nextRun(new Date(at))?.getTime()
  }
  return window
}

/** The latest tick at or before `at`, if the pattern has one. */
export function previousTick(pattern: string, timezone: string, at: number): number | undefined {
  return windowAt(pattern, timezone, at).prev
}

/** The first tick strictly after `after`. */
export function nextTick(pattern: string, timezone: string, after: number): number | undefined {
  return windowAt(pattern, timezone, after).next
}

/**
 * Drives cron ticks from an injected Clock: croner computes the next time (time zones, DST), the clock's
 * timer waits for it. Tests use a manual clock and get exact, deterministic ticks. A tick that fires late
 * (event loop blocked, machine asleep) runs once, as the newest tick due; the ticks it overslept are not replayed.
 */
export function createScheduler(clock: Clock, onTick: (name: string, tickAt: number) => void): Scheduler {
  interface Armed {
    entry: ScheduleEntry
    next: number | undefined
    cancel: () => void
  }
  const armed = new Map<string, Armed>()
  let stopped = false

  const arm = (entry: ScheduleEntry, after: number): Armed => {
    const slot: Armed = { entry, next: nextTick(entry.pattern, entry.timezone, after), cancel: () => {} }
    const wait = () => {
      if (stopped || slot.next === undefined || armed.get(entry.name) !== slot) return
      const remaining = slot.next - clock.now()
      if (remaining > 0) {
        slot.cancel = clock.setTimeout(wait, Math.min(remaining, MAX_WAIT_MS))
        return
      }
      // Late past later ticks (a suspended machine, a clock step): run the newest one due, as the start-up catch-up
      // does. The first missed tick would be the wrong day: a daily report paused on Friday and woken on Monday
      // would report Thursday, and Sunday's would never be sent.
      const now = clock.now()
      const tickAt = Math.max(slot.next, previousTick(entry.pattern, entry.timezone, now) ?? slot.next)
      // Re-arm before running the tick, so a slow or failing run never delays the next one.
      armed.set(entry.name, arm(entry, Math.max(tickAt, now)))
      onTick(entry.name, tickAt)
    }
    queueMicrotask(wait)
    return slot
  }

  return {
    set(entries) {
      const keep = new Set<string>()
      for (const entry of entries) {
        keep.add(entry.name)
        const current = armed.get(entry.name)
        if (current && current.entry.pattern === entry.pattern && current.entry.timezone === entry.timezone) continue
        current?.cancel()
        armed.set(entry.name, arm(entry, clock.now()))
      }
      for (const [name, slot] of armed) {
        if (!keep.has(name)) {
          slot.cancel()
          armed.delete(name)
        }
      }
    },
    nextRun: (name) => armed.get(name)?.next,
    stop() {
      stopped = true
      for (const slot of armed.values()) slot.cancel()
      armed.clear()
    },
  }
}
