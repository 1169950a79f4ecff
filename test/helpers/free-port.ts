import { createServer } from 'node:net'

/** A TCP port on 127.0.0.1 that nothing listens on right now (the OS's pick). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer()
    srv.once('error', fail)
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address()
      srv.close(() => done(typeof address === 'object' && address ? address.port : 0))
    })
  })
}
