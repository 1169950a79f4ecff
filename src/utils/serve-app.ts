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
  if (server.node?.server) answerClientErrors(server.node.server as HttpServer)
  const drain = server.node?.server ? drainOnClose(server.node.server as HttpServer) : async () => {}
  return Object.assign(server, {
    async shutdown(graceMs?: number) {
      await drain(graceMs)
      await server.close()
    },
  })
}

/** Node's parser (llhttp) codes for a body whose length cannot be read from the request. */
const BODY_FRAMING_ERRORS = new Set(['HPE_INVALID_CONTENT_LENGTH', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'HPE_INVALID_TRANSFER_ENCODING', 'HPE_INVALID_CHUNK_SIZE'])

/** What Node's HTTP parser refuses before any handler sees the request, said as the provider's errors are. */
function clientErrorOf(code: string | undefined): { status: number; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'the request line and headers are larger than 16 KB (a very long URL or query string?): send less, or the data in a body' }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'the request did not arrive in time' }
  // Said by what is wrong: a stray byte pasted into an API key was blamed on the URL. The header is not named — it may
  // be the key itself.
  if (code === 'HPE_INVALID_HEADER_TOKEN') {
    return { status: 400, message: 'a header of the request has a character HTTP does not allow (a control character or DEL in a value, a space in a name): check the headers your client sends, an API key pasted with a stray character say' }
  }
  if (code === 'HPE_INVALID_EOF_STATE') {
    return { status: 400, message: 'the request ended before its body did (the client closed its side before sending the length its Content-Length or chunks announced)' }
  }
  if (code !== undefined && BODY_FRAMING_ERRORS.has(code)) {
    return { status: 400, message: "the request's body is not framed as HTTP/1.1 says (Content-Length not a number, both Content-Length and Transfer-Encoding, or a bad chunk size)" }
  }
  return { status: 400, message: 'the request is not valid HTTP/1.1 (a raw space or non-ASCII byte in the URL? percent-encode it)' }
}

/**
 * Node answers a request its parser refuses (a raw non-ASCII byte or space in the URL, headers past 16 KB) with a bare
 * `400 Bad Request` / `431` and no body: the one answer of the service not in the `{"error":{"message","type"}}` shape
 * every other error has, and a client that parses error bodies failed on it. Same status, with that body, and the
 * connection closed as Node closes it. A socket already reset or no longer writable is only destroyed.
 */
function answerClientErrors(server: HttpServer): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    const { status, message } = clientErrorOf(error.code)
    const body = JSON.stringify({ error: { message, type: 'invalid_request' } })
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`)
  })
}

