import { getPriority } from 'node:os'
import { describe, expect, it } from 'vitest'
import { useServeInProcess } from '../helpers/serve-in-process.ts'
import { threadStats } from '../helpers/threads.ts'

/** The nice value of each thread of this process. */
const threadNices = (): number[] => threadStats().map((t) => t.nice)

describe.runIf(process.platform === 'linux')('processing thread priority', () => {
  const serve = useServeInProcess('nice')
  const start = (env: Record<string, string>) => serve.start(env)

  it('runs the processing thread at PROCESSING_NICE and leaves the receiver at its own priority', async () => {
    // Relative to whatever priority the test runner itself has.
    const base = getPriority()
    const target = Math.min(18, base + 7)
    expect(threadNices().every((n) => n === base)).toBe(true)
    await start({ PROCESSING_NICE: String(target) })
    const nices = threadNices()
    // One thread (processing) lowered; the rest — this event loop, the receiver's writer — unchanged.
    expect(nices.filter((n) => n === target)).toHaveLength(1)
    expect(nices.filter((n) => n !== base && n !== target)).toEqual([])
    const ready = await fetch(`${serve.server.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toMatchObject({ role: 'all', processing: 'running' })
  })

  it('by default the processing thread runs at nice 5, and never at a higher priority than the process', async () => {
    const base = getPriority()
    await start({})
    const nices = threadNices()
    if (base < 5) {
      expect(nices.filter((n) => n === 5)).toHaveLength(1)
      expect(nices.filter((n) => n !== base && n !== 5)).toEqual([])
    } else expect(nices.every((n) => n === base)).toBe(true)
  })

  it('PROCESSING_NICE=0 leaves every thread alone', async () => {
    await start({ PROCESSING_NICE: '0' })
    expect(threadNices().every((n) => n === getPriority())).toBe(true)
  })
})
