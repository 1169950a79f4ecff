import { vi } from 'vitest'

/**
 * How long a `vi.waitFor` that names no timeout waits: vitest's default, 1 s, is what a condition needs on a quiet
 * machine, not on a two-core one running the rest of the suite beside it (a batch that commits, a thread that starts).
 * A wait that holds returns as soon as it holds, so only a failing test waits this long. `expect.poll` gets the same
 * from vitest.config.ts (expect.poll.timeout).
 */
export const WAIT_MS = 10_000

type WaitFor = typeof vi.waitFor
const PATCHED = Symbol.for('switchboard.test.waitForDefault')

// Setup files run before every test file, and the files share their worker (isolate: false): patched once.
if (!Reflect.get(vi, PATCHED)) {
  const waitFor: WaitFor = vi.waitFor.bind(vi)
  const withDefault: WaitFor = (callback, options) =>
    waitFor(callback, typeof options === 'number' ? options : { timeout: WAIT_MS, ...options })
  vi.waitFor = withDefault
  Reflect.set(vi, PATCHED, true)
}
