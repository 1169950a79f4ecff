import { withDatabase } from '../helpers/stored-data-dir.ts'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startSlowSmtp } from './smtp.ts'

const BIN = resolve(import.meta.dirname, '../../src/bin.mjs')

/**
 * `report send` stopped (Ctrl-C) while the relay had the report ended at once, exit 130, without a word; the row kept
 * the command's claim, and the running service sent the report again once it lapsed — the relay had delivered the first
 * copy meanwhile (a report probe: two copies). A first Ctrl-C now waits for the relay's answer; a second stops, saying so.
 */
describe('report send stopped while the relay has the report', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  async function sending() {
    const relay = await startSlowSmtp()
    cleanups.push(() => relay.close())
    const dataDir = await withDatabase(mkdtempSync(join(tmpdir(), 'sb-send-stop-')))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    // Not under npm (which forwards each Ctrl-C a second time): one signal is one Ctrl-C.
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, SWITCHBOARD_CONFIG: 'none', LOG_LEVEL: 'silent', SMTP_URL: `smtp://127.0.0.1:${relay.port}` }
    const child = spawn(process.execPath, [BIN, 'report', 'send', '--date', '2026-11-20', '--timezone', 'UTC', '--to', 'ops@example.com'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    cleanups.push(() => void (child.exitCode === null && child.kill('SIGKILL')))
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => void (out += c.toString('utf8')))
    child.stderr.on('data', (c: Buffer) => void (err += c.toString('utf8')))
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    // The relay has the whole message and sits on its answer.
    await expect.poll(() => relay.received(), { timeout: 30_000 }).toBe(1)
    return { relay, child, exited, out: () => out, err: () => err }
  }

  it('a first Ctrl-C waits for the relay and says so: the report is sent once, exit 0', async () => {
    const s = await sending()
    s.child.kill('SIGINT')
    await expect.poll(s.err).toMatch(/^report send: finishing the send first, so the report is neither lost nor sent twice .*; Ctrl-C again to stop now\n$/)
    s.relay.release()
    expect(await s.exited).toBe(0)
    expect(s.out()).toMatch(/^sent:\n/)
    expect(s.relay.received()).toBe(1)
  }, 60_000)

  it('a second Ctrl-C stops it, exit 130, saying the report may have gone out and may be sent again', async () => {
    const s = await sending()
    s.child.kill('SIGINT')
    await expect.poll(s.err).toMatch(/finishing the send first/)
    s.child.kill('SIGINT')
    expect(await s.exited).toBe(130)
    expect(s.err()).toMatch(/\nreport send: stopped while the report was being sent: it may have gone out, and the running service sends it again once this command's claim lapses \(2 minutes\) — see ".*mail list"\n$/)
  }, 60_000)
})
