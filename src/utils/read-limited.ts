export type LimitedBody = { ok: true; bytes: Uint8Array } | { ok: false }

/**
 * Reads a request body of at most `max` bytes, counting as it streams: a Content-Length can be absent
 * (chunked) or lie, so only the count decides. Past the limit nothing more is kept. By default the rest is
 * read and dropped in the background rather than cancelled, because cancelling a Node request's stream
 * destroys the socket and an API client may see a reset instead of the 413 it is owed; draining costs
 * bandwidth, never memory. `overflow: 'cancel'` stops reading instead (a browser form: the answer goes out
 * with `Connection: close`, and a body that never ends is not read for ever).
 */
export async function readLimited(stream: ReadableStream<Uint8Array> | null, max: number, options: { overflow?: 'drain' | 'cancel' } = {}): Promise<LimitedBody> {
  if (!stream) return { ok: true, bytes: new Uint8Array(0) }
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      if (options.overflow === 'cancel') reader.cancel().catch(() => {})
      else void drain(reader)
      return { ok: false }
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return { ok: true, bytes: chunks[0]! }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { ok: true, bytes }
}

async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    for (;;) if ((await reader.read()).done) return
  } catch {
    // The client went away: nothing left to drain.
  }
}
