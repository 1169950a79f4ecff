import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { childEnv, descendants, isAlive, portIsFree, spawnCollecting, type Spawned } from './processes.ts'

// A process manager (or a script) stops `npm start` by the PID it got back: SIGTERM to npm must stop the
// node server under it, free the port, and leave no orphan re-parented to PID 1.

const dirs: string[] = []
const running: Spawned[] = []
afterEach(async () => {
  for (const s of running.splice(0)) {
    for (const pid of [s.child.pid!, ...descendants(s.child.pid!)]) if (isAlive(pid)) process.kill(pid, 'SIGKILL')
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function startAndStop(args: string[], readyPattern: RegExp, signal: NodeJS.Signals, stoppedLine: RegExp, extraEnv: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-stop-'))
  dirs.push(dataDir)
  const spawned = spawnCollecting('npm', args, childEnv({ DATA_DIR: dataDir, PORT: '0', ...extraEnv }))
  running.push(spawned)
  await expect.poll(() => spawned.stdout(), { timeout: 30_000, interval: 100 }).toMatch(readyPattern)
  const port = Number(readyPattern.exec(spawned.stdout())![1])
  expect(await portIsFree(port)).toBe(false)
  if (args[0] === 'start') {
    // Started as a process manager does (stdout a pipe, i.e. a log): the generated admin token stays in its file.
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim()
    expect(token.length).toBeGreaterThanOrEqual(32)
    expect(spawned.stdout()).not.toContain(token)
    expect(spawned.stdout()).toContain(`generated now into ${join(dataDir, 'admin-token')}`)
  }
  const tree = descendants(spawned.child.pid!)
  expect(tree.length).toBeGreaterThan(0)

  process.kill(spawned.child.pid!, signal)
  const exit = await spawned.exited
  // npm re-raises the signal it got once its child has exited, or exits with the child's code.
  expect(exit.code === 0 || exit.signal === signal).toBe(true)
  await expect.poll(() => tree.filter(isAlive), { timeout: 10_000 }).toEqual([])
  expect(await portIsFree(port)).toBe(true)
  expect(spawned.stdout()).toMatch(stoppedLine)
  return spawned.stdout()
}

describe('stopping by the PID npm returns', () => {
  it('npm start: SIGTERM stops the server, frees the port, leaves no child, and says so in the log', async () => {
    const stdout = await startAndStop(['start'], /running at http:\/\/127\.0\.0\.1:(\d+)/, 'SIGTERM', /^switchboard stopped$/m, { LOG_LEVEL: 'info' })
    // Beside the plain lines for a person, a JSON line for a log collector, as the ready line is: which signal.
    const logged = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)
    const ready = logged.findIndex((line) => line.msg === 'switchboard ready')
    const stopping = logged.findIndex((line) => line.msg === 'switchboard stopping')
    expect(ready).toBeGreaterThanOrEqual(0)
    expect(stopping).toBeGreaterThan(ready)
    expect(logged[stopping]).toMatchObject({ level: 30, signal: 'SIGTERM', time: expect.any(Number) })
    // And the end of the stop, with how long it took: a stop cut short by a kill shows as a stopping line without it.
    const stopped = logged.findIndex((line) => line.msg === 'switchboard stopped')
    expect(stopped).toBeGreaterThan(stopping)
    expect(logged[stopped]).toMatchObject({ level: 30, signal: 'SIGTERM', stop_ms: expect.any(Number) })
  })

  it('npm start: SIGINT does the same', async () => {
    await startAndStop(['start'], /running at http:\/\/127\.0\.0\.1:(\d+)/, 'SIGINT', /switchboard stopped\n$/)
  })

  it('npm run cli -- sandbox: SIGTERM stops the sandbox, frees the port, leaves no child', async () => {
    await startAndStop(['run', 'cli', '--', 'sandbox', '--port', '0'], /listening at http:\/\/127\.0\.0\.1:(\d+)\/v1/, 'SIGTERM', /sandbox stopped\n$/)
  })
})
