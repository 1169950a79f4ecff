import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'

/**
 * A process frozen past a request's deadline (a VM paused, a laptop asleep: here SIGSTOP, then SIGCONT) while the
 * answer arrives. Woken, Node ran its due timers before it read the sockets, so the deadline fired first and an
 * answer already received was thrown away as a timeout — for a call, placed but recorded without its trace id. The
 * client runs in a child process the test freezes once the request has reached this server.
 */
const FIXTURE = join(import.meta.dirname, 'fixtures', 'frozen-client.ts')
/** The checkout, where `tsx` resolves (tests run in a directory of their own). */
const ROOT = join(import.meta.dirname, '..', '..')

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  server = undefined
})

async function frozenWhileAnswering(kind: 'provider' | 'destination'): Promise<Record<string, unknown>> {
  let child: ReturnType<typeof spawn> | undefined
  server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      // The request is here: freeze its sender, answer, and wake it well after its 300 ms deadline.
      child!.kill('SIGSTOP')
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ data: { agent_id: 101, conversation_id: null, scheduled_for: null, status: 'initiated', trace_id: 'tr_answered' } }))
      setTimeout(() => child!.kill('SIGCONT'), 800)
    })
  })
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, kind, url], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  // 'close', not 'exit': the child's output may still be in the pipe when it exits.
  await new Promise((resolve) => child!.once('close', resolve))
  return JSON.parse(out) as Record<string, unknown>
}

it("the provider client keeps an answer that arrived while its process was frozen past the request's deadline", async () => {
  expect(await frozenWhileAnswering('provider')).toEqual({ trace_id: 'tr_answered' })
}, 30_000)

it('a destination attempt keeps an answer that arrived while its process was frozen past the deadline', async () => {
  expect(await frozenWhileAnswering('destination')).toEqual({ status: 200, error: null })
}, 30_000)
