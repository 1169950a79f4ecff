import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy on loopback between switchboard and a real service (Postgres, SMTP) that a test can cut:
 * every open connection is destroyed at once and new ones are refused (the listener closes, so
 * connecting gets ECONNREFUSED, as from a restarting database) until `restore`.
 */
export interface TcpGate {
  port: number
  /** Connections currently open through the gate. */
  open(): number
  /** Destroys every connection and refuses new ones. */
  cut(): Promise<void>
  /** Listens again on the same port. */
  restore(): Promise<void>
  close(): Promise<void>
}

export async function startTcpGate(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpGate> {
  const sockets = new Set<Socket>()
  let port = 0
  let server: Server | undefined

  const listen = async (): Promise<void> => {
    const srv = createServer((downstream) => {
      const upstream = connect(targetPort, targetHost)
      sockets.add(downstream)
      sockets.add(upstream)
      const drop = () => {
        downstream.destroy()
        upstream.destroy()
        sockets.delete(downstream)
        sockets.delete(upstream)
      }
      downstream.on('error', drop).on('close', drop)
      upstream.on('error', drop).on('close', drop)
      downstream.pipe(upstream)
      upstream.pipe(downstream)
    })
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject)
      srv.listen(port, '127.0.0.1', () => resolve())
    })
    const address = srv.address()
    port = typeof address === 'object' && address ? address.port : port
    server = srv
  }

  const stop = async (): Promise<void> => {
    const srv = server
    server = undefined
    for (const s of sockets) s.destroy()
    sockets.clear()
    if (srv) await new Promise<void>((resolve) => srv.close(() => resolve()))
  }

  await listen()
  return {
    get port() {
      return port
    },
    open: () => sockets.size / 2,
    cut: stop,
    restore: listen,
    close: stop,
  }
}
