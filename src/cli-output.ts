/** The standard streams a reader has closed (`doctor | head -1`): their output is dropped. */
const closed = new WeakSet<NodeJS.WritableStream>()
const listened = new WeakSet<NodeJS.WritableStream>()
/** Who waits for a stream's reader to go (a `--watch` that would otherwise watch on with nobody reading). */
const waiting = new WeakMap<NodeJS.WritableStream, Array<() => void>>()

/**
 * Writes to stdout or stderr, which a reader may close before the command ends (`doctor | head -1`, a pager quit
 * early). Node reports the broken pipe as an 'error' event, and with no listener that ended the command with exit 1
 * and a stack trace. It only means nobody reads any more: the rest of the output is dropped, and the command ends as
 * it would have, with its own exit code. Any other error on the stream is thrown as before.
 */
export function writerTo(stream: NodeJS.WritableStream): (text: string) => void {
  if (!listened.has(stream)) {
    listened.add(stream)
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
      closed.add(stream)
      for (const wake of waiting.get(stream) ?? []) wake()
      waiting.delete(stream)
    })
  }
  return (text) => {
    if (!closed.has(stream)) stream.write(text)
  }
}

/**
 * Resolves once `stream`'s reader is known to have gone — a write to it met a broken pipe (writerTo) — so a command
 * that would run until Ctrl-C (`recipes check --watch | head -1`) ends instead of watching on for nobody.
 */
export function whenReaderGone(stream: NodeJS.WritableStream): Promise<void> {
  if (closed.has(stream)) return Promise.resolve()
  return new Promise((resolve) => {
    const list = waiting.get(stream) ?? []
    list.push(resolve)
    waiting.set(stream, list)
  })
}
