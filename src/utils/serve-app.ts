import { STATUS_CODES, ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http'
import { serve, type H3 } from 'h3'

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

/** Serves an h3 app over HTTP/1.1 the way every switchboard server does (service, standalone sandbox). */
export function serveApp(app: H3, options: ServeAppOptions): ReturnType<typeof serve> {
  return serve(app, {
    port: options.port,
    hostname: options.hostname,
    silent: true,
    gracefulShutdown: false,
    node: { ServerResponse: ReasonPhraseResponse },
  })
}
