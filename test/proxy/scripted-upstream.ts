import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

export interface SeenRequest {
  method: string
  url: string
  body: string
  authorization: string | undefined
}

/** Answers one request; returning false relays it to the sandbox instead. */
export type Script = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | false | Promise<void | false>

export interface ScriptedUpstream {
  url: string
  /** Every request received, in order, with its body. */
  seen: SeenRequest[]
  /** Requests seen for one method and path (query included). */
  count(method: string, url: string | RegExp): number
  answer(script: Script | undefined): void
  close(): Promise<void>
}

/**
 * A provider stand-in on 127.0.0.1 that answers as the test scripts it and relays the rest to the sandbox,
 * recording every request, so a test sees what the proxy sent and can hold an answer back.
 */
export async function scriptedUpstream(sandboxUrl: string): Promise<ScriptedUpstream> {
  const seen: SeenRequest[] = []
  let script: Script | undefined
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      seen.push({ method: req.method ?? '', url: req.url ?? '', body: body.toString('utf8'), authorization: req.headers.authorization })
      if (script && (await script(req, body, res)) !== false) return
      const upstream = await fetch(`${sandboxUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)).map(([k, v]) => [k, String(v)])),
        body: body.length ? body : undefined,
      }).catch(() => undefined)
      if (!upstream) return res.destroy()
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers))
      res.end(Buffer.from(await upstream.arrayBuffer()))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    seen,
    count: (method, url) => seen.filter((r) => r.method === method && (typeof url === 'string' ? r.url === url : url.test(r.url))).length,
    answer(next) {
      script = next
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  }
}

/** A promise and the function that settles it: an answer held back until the test lets it go. */
export function gate(): { wait: Promise<void>; open(): void } {
  let open = () => {}
  const wait = new Promise<void>((resolve) => (open = resolve))
  return { wait, open }
}
