import { STATUS_CODES, ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'
import type { Server as HttpServer } from 'node:http'
import { serve, type H3 } from 'h3'
import { drainOnClose } from './graceful-close.ts'

/**
 * srvx writes every response head with the web Response's `statusText`, which is '' for any Response built
 * without one (nearly all of them), and Node then sends `HTTP/1.1 200 ` with an empty reason phrase. A
 * reason phrase is optional in HTTP/1.1, but clients and tools that show or check it (and RFC 9112's
 * "SHOULD") expect `200 OK`: an empty one is replaced by the standard phrase for the code.
 */
export class ReasonPhraseResponse<Req extends IncomingMessage = IncomingMessage> extends ServerResponse<Req> {
  override writeHead(statusCode: number, reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
    if (reason === '') reason = STATUS_CODES[statusCode] ?? 'Unknown'
    if (typeof reason === 'string') return super.writeHead(statusCode, reason, headers)
    return super.writeHead(statusCode, reason)
  }
}

export interface ServeAppOptions {
  port: number
  hostname: string
}

export type ServedApp = ReturnType<typeof serve> & {
  /** Stops listening, answers the requests in flight (cut after `graceMs`, default SHUTDOWN_GRACE_MS), then closes. */
  shutdown(graceMs?: number): Promise<void>
}

/** Serves an h3 app over HTTP/1.1 the way every switchboard server does (service, standalone sandbox). */
export function serveApp(app: H3, options: ServeAppOptions): ServedApp {
  const server = serve(app, {
    port: options.port,
    hostname: options.hostname,
    silent: true,
    gracefulShutdown: false,
    node: { ServerResponse: ReasonPhraseResponse },
  })
  const drain = server.node?.server ? drainOnClose(server.node.server as HttpServer) : async () => {}
  return Object.assign(server, {
    async shutdown(graceMs?: number) {
      await drain(graceMs)
      await server.close()
    },
  })
}
