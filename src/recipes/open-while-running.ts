/** A recipe called a `ctx` member with effects after its run ended (from a timer or a promise it left running). */
export class RunEndedError extends Error {
  override readonly name = 'RunEndedError'
}

/** Whether a run is over: set once its outcome is decided, before it is recorded. */
export interface RunClock {
  ended: boolean
  /**
   * The `ctx` calls still going, by what was called: the runner waits for them before the run is over, so that a call
   * the recipe did not `await` happens within its run and its record holds it.
   */
  inFlight: Map<Promise<void>, string>
}

/** A run's clock: not ended, nothing in flight. */
export function runClock(): RunClock {
  return { ended: false, inFlight: new Map() }
}

/**
 * `target` with its `members` (or every method) refused once the run is over. A recipe that left a timer or a promise
 * running could call the mail, the call queue, the do-not-call list or its state after its run was recorded: the
 * effects happened — a call placed, a mail sent — while the run's record said it planned nothing, and no line said
 * so. Each such call now rejects with RunEndedError and `onLate` is told (the runner logs it).
 */
export function openWhileRunning<T extends object>(target: T, path: string, members: readonly string[] | 'all', run: RunClock, onLate: (what: string) => void): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver)
      if (typeof value !== 'function' || typeof property !== 'string' || (members !== 'all' && !members.includes(property))) return value
      return (...args: unknown[]) => {
        const what = `${path}.${property}()`
        if (!run.ended) return tracked(run, what, (value as (...a: unknown[]) => unknown).apply(object, args))
        onLate(what)
        return Promise.reject(new RunEndedError(`${what} was called after the run ended (from a timer or a promise the recipe left running): not done — a run's effects happen while it runs, so that its record holds them`))
      }
    },
  })
}

/**
 * `result`, kept in `run.inFlight` until it settles when it is a promise. The recipe gets a promise of its own that
 * settles as it does, so that one it never awaits still rejects unhandled (said as such) rather than being taken as
 * handled by the runner's bookkeeping.
 */
function tracked(run: RunClock, what: string, result: unknown): unknown {
  if (!(result instanceof Promise)) return result
  const settled = result.then(
    () => undefined,
    () => undefined,
  )
  run.inFlight.set(settled, what)
  void settled.then(() => run.inFlight.delete(settled))
  return result.then((value: unknown) => value)
}
