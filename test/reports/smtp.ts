import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'

/** A real SMTP server on loopback (smtp-server) that keeps every message it accepts, parsed. */
export async function startSmtp(
  options: Partial<SMTPServerOptions> & {
    /** A reason to refuse a message for good (554 at the end of DATA), or undefined to accept it. */
    refuse?: (message: ParsedMail) => string | undefined
  } = {},
): Promise<{ port: number; messages: ParsedMail[]; raw: Buffer[]; envelopes: string[][]; close(): Promise<void> }> {
  const { refuse, ...serverOptions } = options
  const messages: ParsedMail[] = []
  const raw: Buffer[] = []
  const envelopes: string[][] = []
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    ...serverOptions,
    onData(stream, session, callback) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const bytes = Buffer.concat(chunks)
        raw.push(bytes)
        envelopes.push(session.envelope.rcptTo.map((r) => r.address))
        simpleParser(bytes).then(
          (m) => {
            const refusal = refuse?.(m)
            if (refusal) return callback(Object.assign(new Error(refusal), { responseCode: 554 }))
            messages.push(m)
            callback()
          },
          (e: Error) => callback(e),
        )
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.server.address() as AddressInfo).port
  return { port, messages, raw, envelopes, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** A loopback port with nothing listening on it (bound, then released). */
export async function closedPort(): Promise<number> {
  const srv = createServer()
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const port = (srv.address() as AddressInfo).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  return port
}

/** A relay that takes the message's bytes and then sits on its answer until released (a slow relay, a huge attachment). */
export async function startSlowSmtp() {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let received = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      stream.resume()
      stream.on('end', () => {
        received++
        void released.then(() => callback())
      })
    },
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.server.address() as AddressInfo).port,
    received: () => received,
    release,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
