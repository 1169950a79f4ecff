import type { Clock } from './clock.ts'

export interface WriteAgainOptions {
  /** Tries in all, the first included. */
  tries: number
  /** The wait between two tries, on the clock. */
  everyMs: number
  /**
   * Before each new try: whether the work is still this process's (its claim renewed). False gives up — another
   * process has it now, and records what it does. A check that fails itself (the database still down) counts as yes.
   */
  stillOurs?: () => Promise<boolean>
  /**
   * Whether a failure may pass if the write is tried again (a dropped connection) rather than fail alike (a constraint,
   * a bug): one that may not is thrown at once. Every failure may, without it.
   */
  retryable?: (error: unknown) => boolean
  /** Told of the first failure that is to be tried again (to log it once). */
  onFirstFailure?: (error: unknown) => void
  /** Stops trying (the service stopping): a wait in progress ends at once, and the last error stands. */
  signal?: AbortSignal
}

/**
 * Records what has already happened — a recipe batch run, a mail the relay took, a delivery its destination answered —
 * again while the database refuses the write (a dropped connection, a failover). Until it is written, only the work's
 * claim keeps another try of the work itself away (a second run, a second copy of the mail or the event): so the tries
 * stay within the claim's life, renewing it between them (`stillOurs`). Returns the write's result; throws its last
 * error when out of tries, stopped, no longer ours, or not one to try again (`retryable`) — the claim then lapses and
 * the work is done again (at least once, as after a crash).
 */
export async function writeAgain<T>(clock: Clock, write: () => Promise<T>, options: WriteAgainOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write()
    } catch (error) {
      if (options.retryable && !options.retryable(error)) throw error
      if (attempt === 1) options.onFirstFailure?.(error)
      if (attempt >= options.tries || options.signal?.aborted) throw error
      await pause(clock, options.everyMs, options.signal)
      if (options.signal?.aborted) throw error
      if (options.stillOurs && !(await options.stillOurs().catch(() => true))) throw error
    }
  }
}

function pause(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      cancel()
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const cancel = clock.setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
