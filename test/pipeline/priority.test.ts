import { getPriority } from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { startServe, until, waitForLog, type ServeChild } from '../helpers/serve-child.ts'
import { useServeInProcess } from '../helpers/serve-in-process.ts'
import { threadStats } from '../helpers/threads.ts'
import { tempRecipesDir } from '../recipes/helpers.ts'

/**
 * The nice value of each thread this process started since `before` (a map of the threads then): the runner's own
 * threads, and any an earlier test file left (test files share their worker process), are not this server's.
 */
const newThreadNices = (before: Map<number, number>): number[] => threadStats().filter((t) => !before.has(t.tid)).map((t) => t.nice)
const threadsNow = () => new Map(threadStats().map((t) => [t.tid, t.nice]))
/** Threads that were there before and are still, whose nice value changed since. */
const changedSince = (before: Map<number, number>) => threadStats().filter((t) => before.has(t.tid) && before.get(t.tid) !== t.nice)

describe.runIf(process.platform === 'linux')('processing thread priority', () => {
  const serve = useServeInProcess('nice')

  it('runs the processing thread at PROCESSING_NICE and leaves the receiver at its own priority', async () => {
    // Relative to whatever priority the test runner itself has.
    const base = getPriority()
    const target = Math.min(18, base + 7)
    const before = threadsNow()
    expect(before.get(process.pid)).toBe(base)
    await serve.start({ PROCESSING_NICE: String(target) })
    const nices = newThreadNices(before)
    // One thread (processing) lowered; the rest it started — the receiver's writer, the checkpoint thread — unchanged,
    // and so is every thread that was there before: this event loop, the runner's.
    expect(nices.filter((n) => n === target)).toHaveLength(1)
    expect(nices.filter((n) => n !== base && n !== target)).toEqual([])
    expect(changedSince(before)).toEqual([])
    expect(getPriority()).toBe(base)
    const ready = await fetch(`${serve.server.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ role: 'all', processing: 'running' })
  })

  it('by default the processing thread runs at nice 5, and never at a higher priority than the process', async () => {
    const base = getPriority()
    const before = threadsNow()
    await serve.start({})
    const nices = newThreadNices(before)
    if (base < 5) {
      expect(nices.filter((n) => n === 5)).toHaveLength(1)
      expect(nices.filter((n) => n !== base && n !== 5)).toEqual([])
    } else expect(nices.every((n) => n === base)).toBe(true)
    expect(changedSince(before)).toEqual([])
  })

  it('PROCESSING_NICE=0 leaves every thread alone', async () => {
    const before = threadsNow()
    await serve.start({ PROCESSING_NICE: '0' })
    expect(newThreadNices(before).every((n) => n === getPriority())).toBe(true)
    expect(changedSince(before)).toEqual([])
  })
})

// libuv's thread pool — where Node runs the receiver's and the proxy's file reads, DNS lookups and compression — is
// started by the first thread that uses it, and on Linux a new thread inherits its creator's nice value. Node 22 and
// later start it on first use (Node 20 at start-up, from the main thread) and name its threads, so there is something
// to check. Started from the processing thread, the whole pool ran at PROCESSING_NICE: the receiver's work queued
// behind a thread that gives way to it.
const namesThreads = Number(process.versions.node.split('.')[0]) >= 22
// Lowered only below nice 5 (PROCESSING_NICE never raises a priority).
describe.runIf(process.platform === 'linux' && namesThreads && getPriority() < 5)('the thread pool under a lowered processing thread', () => {
  let serve: ServeChild | undefined
  let recipes: ReturnType<typeof tempRecipesDir> | undefined
  afterEach(async () => {
    await serve?.stop()
    recipes?.cleanup()
    serve = recipes = undefined
  })

  it('runs at the process priority even when processing uses it first', async () => {
    recipes = tempRecipesDir()
    // Its top-level code runs on the processing thread as it starts, before the receiver has used the pool.
    recipes.write('reads-a-file', `import { readFile } from 'node:fs/promises'
import { defineRecipe } from 'switchboard'
const own = await readFile(new URL(import.meta.url))
export default defineRecipe({ description: 'reads its own file as it loads (' + own.length + ' bytes)', schedule: '0 9 * * *', async run() {} })
`)
    serve = await startServe({ RECIPES_DIR: recipes.dir, RECIPES_TYPECHECK: 'false', PROCESSING_NICE: '5' })
    // Ready once the processing thread has loaded the recipes (the answer to /readyz may come before).
    await waitForLog(serve, /switchboard ready/)
    const pid = serve.child.pid!
    await until(() => threadStats(pid).some((t) => t.name === 'libuv-worker'), 'the thread pool')
    const base = getPriority(pid)
    // The processing thread is lowered, and only it: not the pool (four threads by default, started by then). Worker
    // threads are named WorkerThread on Node 24, node on 22.
    const lowered = threadStats(pid).filter((t) => t.nice !== base)
    expect(lowered).toHaveLength(1)
    expect(lowered[0]).toMatchObject({ nice: 5, name: expect.not.stringMatching(/^libuv-worker$/) })
  })
})
