export interface IdleDeadline {
  /** Aborted once the timer runs out, with a TimeoutError (what failureOf and the callers look for). */
  readonly signal: AbortSignal
  /** (Re)starts the full timeout. */
  arm(): void
  stop(): void
  /** The body, restarting the timer with every chunk and stopping it at the end. */
  watch(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array>
}

/**
 * A deadline for a download that may be long: the same timeout for the answer's headers, then for each
 * gap between chunks, so a large file on a slow link is not cut off while bytes still flow, and a stalled
 * one is (the fetch is aborted, which errors its body). Real timers, as for every upstream deadline.
 */
export function createIdleDeadline(timeoutMs: number): IdleDeadline {
  const controller = new AbortController()
  let timer: NodeJS.Timeout | undefined
  const deadline: IdleDeadline = {
    signal: controller.signal,
    arm() {
      clearTimeout(timer)
      timer = setTimeout(() => controller.abort(new DOMException(`no bytes from the provider for ${timeoutMs} ms`, 'TimeoutError')), timeoutMs)
      timer.unref()
    },
    stop() {
      clearTimeout(timer)
    },
    watch(body) {
      return body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, ctl) {
            deadline.arm()
            ctl.enqueue(chunk)
          },
          flush() {
            deadline.stop()
          },
        }),
      )
    },
  }
  return deadline
}
