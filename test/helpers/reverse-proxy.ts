import http from 'node:http'

export interface ReverseProxyOptions {
  /** The path to ask the service for, or undefined for a request the proxy answers 404 itself (outside its location). */
  path?(url: string): string | undefined
  /** The headers the proxy sends on (nginx's `proxy_set_header` lines). */
  headers?(req: http.IncomingMessage): http.OutgoingHttpHeaders
}

/**
 * A reverse proxy on loopback in front of the service, built from node:http (nginx cannot be installed from npm): each
 * request is passed to `127.0.0.1:<upstreamPort>` with the path and headers the options make, bodies streamed both ways.
 */
export function startReverseProxy(upstreamPort: number, options: ReverseProxyOptions = {}): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = options.path ? options.path(req.url ?? '/') : req.url
    if (path === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' })
      res.end('not switchboard')
      return
    }
    const headers = options.headers ? options.headers(req) : req.headers
    const upstream = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    upstream.on('error', () => {
      res.writeHead(502)
      res.end()
    })
    req.pipe(upstream)
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}
