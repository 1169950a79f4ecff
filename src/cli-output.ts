/** The standard streams a reader has closed (`doctor | head -1`): their output is dropped. */
const closed = new WeakSet<NodeJS.WritableStream>()
const listened = new WeakSet<NodeJS.WritableStream>()

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
    })
  }
  return (text) => {
    if (!closed.has(stream)) stream.write(text)
  }
}
