import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A recipes folder outside the repository: `switchboard` must still resolve to the running service. */
export function tempRecipesDir(): { dir: string; write(name: string, source: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipes-'))
  return {
    dir,
    write(name, source) {
      const file = join(dir, `${name}.ts`)
      writeFileSync(file, source)
      return file
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** A recipe that returns its trigger and clock time, so tests can read when it ran from the run records. */
export function tickRecipe(options: { schedule: string; timezone?: string; description?: string }): string {
  return `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: ${JSON.stringify(options.description ?? 'records its ticks')},
  schedule: ${JSON.stringify(options.schedule)},
  ${options.timezone ? `timezone: ${JSON.stringify(options.timezone)},` : ''}
  run(ctx) {
    return { at: ctx.trigger.scheduledAt ? new Date(ctx.trigger.scheduledAt).toISOString() : null, now: ctx.now.toISOString(), tz: ctx.timezone }
  },
})
`
}

/**
 * A clock for end-to-end tests over real sockets: time flows at real speed from `start`, and `jumpTo`
 * moves it forward at once. Timers are kept by due time, so after a jump each one due fires once (a
 * 1-second poll does not replay the hours skipped) — the way a machine waking from sleep behaves.
 */
export interface WarpClock {
  now(): number
  setTimeout(fn: () => void, ms: number): () => void
  jumpTo(at: number | string): void
}

export function createWarpClock(start: number | string): WarpClock {
  let offset = (typeof start === 'number' ? start : Date.parse(start)) - Date.now()
  const now = () => Date.now() + offset
  interface Timer { at: number; fn: () => void; handle?: ReturnType<typeof setTimeout> }
  const timers = new Set<Timer>()
  const arm = (t: Timer) => {
    if (t.handle) clearTimeout(t.handle)
    t.handle = setTimeout(() => {
      if (now() < t.at) return arm(t)
      timers.delete(t)
      t.fn()
    }, Math.min(Math.max(0, t.at - now()), 2 ** 31 - 1))
    t.handle.unref?.()
  }
  return {
    now,
    setTimeout(fn, ms) {
      const t: Timer = { at: now() + Math.max(0, ms), fn }
      timers.add(t)
      arm(t)
      return () => {
        if (t.handle) clearTimeout(t.handle)
        timers.delete(t)
      }
    },
    jumpTo(at) {
      const target = typeof at === 'number' ? at : Date.parse(at)
      offset += Math.max(0, target - now())
      for (const t of timers) arm(t)
    },
  }
}
