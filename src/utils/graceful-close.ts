import { Server as NetServer, type Socket } from 'node:net'
import type { Server as HttpServer, ServerResponse } from 'node:http'

/**
 * How long a stopping server waits for the requests it is answering (a proxied call to a slow provider, a webhook
 * whose body is still arriving) before it cuts what is left: past the upstream timeout (15 s), inside the 30 s most
 * process managers give a stop before they kill.
 */
export const SHUTDOWN_GRACE_MS = 20_000

/**
 * How long an idle keep-alive connection is left open once the server stops listening: a client sending a stream of
 * requests on it (the provider's deliveries) gets its next one answered, with `Connection: close`, instead of a reset
 * of the request it was writing as the connection was closed under it.
 */
export const SHUTDOWN_LINGER_MS = 200

/**
 * A server's stop that answers what it has started: it stops listening, answers every request already in flight and
 * every request still arriving on an open connection for SHUTDOWN_LINGER_MS — each with `Connection: close` — then
 * closes the connections left idle; only what is still running after `graceMs` is cut. (Closing every connection at
 * once reset the requests in progress on them: a proxied call, a delivery the provider then had to retry.)
 */
export function drainOnClose(server: HttpServer): (graceMs?: number) => Promise<void> {
  const inFlight = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  let closing = false
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  server.on('request', (_req, res: ServerResponse) => {
    if (closing) res.shouldKeepAlive = false
    inFlight.add(res)
    res.once('close', () => inFlight.delete(res))
  })
  return async (graceMs = SHUTDOWN_GRACE_MS) => {
    closing = true
    for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false
    // Stop listening only: http's own close() would also close every idle connection at once, under a request its
    // client may be writing just then.
    const stopped = new Promise<void>((resolve) => (server.listening ? NetServer.prototype.close.call(server, () => resolve()) : resolve()))
    const started = performance.now()
    const idleLingered = () => inFlight.size === 0 && performance.now() - started >= SHUTDOWN_LINGER_MS
    while (sockets.size > 0 && !idleLingered() && performance.now() - started < graceMs) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    // What is left: idle connections past the linger, and whatever the grace could not wait for.
    server.close()
    server.closeAllConnections()
    await stopped
  }
}
