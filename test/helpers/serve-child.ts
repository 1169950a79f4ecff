import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freePort } from './free-port.ts'

export { freePort }

const BIN = resolve(import.meta.dirname, '../../src/bin.mjs')

/** A real `switchboard serve` process, its log lines kept for assertions. */
export interface ServeChild {
  child: ChildProcess
  url: string
  port: number
  dataDir: string
  lines: string[]
  alive(): boolean
  /** Log objects whose `msg` matches. */
  logs(msg: RegExp): Array<Record<string, unknown>>
  stop(): Promise<void>
}

export async function startServe(env: Record<string, string>, options: { dataDir?: string; keepDataDir?: boolean; /** Another checkout's bin (a previous version). */ bin?: string; /** `serve` options, e.g. `['--role', 'worker']`. */ args?: string[] } = {}): Promise<ServeChild> {
  const port = await freePort()
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'sb-fault-'))
  const lines: string[] = []
  const child = spawn(process.execPath, [options.bin ?? BIN, 'serve', ...(options.args ?? [])], {
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      RECONCILE_INTERVAL_SECONDS: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let buffer = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    lines.push(...parts)
  })
  child.stderr!.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n')))
  const url = `http://127.0.0.1:${port}`
  const started = Date.now()
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve exited early (${child.exitCode}): ${lines.join('\n').slice(-2000)}`)
    if (Date.now() - started > 20_000) throw new Error('serve not ready after 20 s')
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  return {
    child,
    url,
    port,
    dataDir,
    lines,
    alive: () => child.exitCode === null && child.signalCode === null,
    logs(msg) {
      const out: Array<Record<string, unknown>> = []
      for (const line of lines) {
        if (!line.startsWith('{')) continue
        try {
          const obj = JSON.parse(line) as Record<string, unknown>
          if (typeof obj.msg === 'string' && msg.test(obj.msg)) out.push(obj)
        } catch {
          // banner or partial line
        }
      }
      return out
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited
        clearTimeout(timer)
      }
      if (!options.keepDataDir && !options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Waits until `child` has logged a line whose `msg` matches (polls its captured lines; fails if it exits). */
export async function waitForLog(child: ServeChild, msg: RegExp, timeoutMs = 30_000): Promise<void> {
  const started = Date.now()
  while (child.logs(msg).length === 0) {
    if (!child.alive()) throw new Error(`serve exited: ${child.lines.join('\n').slice(-2000)}`)
    if (Date.now() - started > timeoutMs) throw new Error(`no log line ${msg} after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Polls `check` every 50 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
