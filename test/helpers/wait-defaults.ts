import { vi } from 'vitest'
import { WAIT_MS } from './wait-ms.ts'

// Every `vi.waitFor` that names no timeout waits WAIT_MS; `expect.poll` gets the same from vitest.config.ts.
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
