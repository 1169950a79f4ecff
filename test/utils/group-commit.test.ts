import { describe, expect, it } from 'vitest'
import { createGroupCommit } from '../../src/utils/group-commit.ts'

describe('createGroupCommit', () => {
  it('writes the items added in the same turn as one batch, and the ones added while it runs as the next', async () => {
    const batches: number[][] = []
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const group = createGroupCommit<number>(async (items) => {
      batches.push(items)
      if (batches.length === 1) await gate
    })
    const first = [1, 2, 3].map((n) => group.add(n))
    // The first batch is written after one turn; wait until it is in progress, then add more.
    while (batches.length === 0) await new Promise((resolve) => setImmediate(resolve))
    const second = [4, 5].map((n) => group.add(n))
    let firstSettled = false
    void Promise.all(first).then(() => (firstSettled = true))
    await new Promise((resolve) => setImmediate(resolve))
    expect(firstSettled).toBe(false) // an add settles only once its own batch is written
    release()
    await Promise.all([...first, ...second])
    expect(batches).toEqual([[1, 2, 3], [4, 5]])
  })

  it('writes a failed batch again one item at a time, so only the bad item fails', async () => {
    const writes: number[][] = []
    const group = createGroupCommit<number>(async (items) => {
      writes.push(items)
      if (items.includes(13)) throw new Error('refused 13')
    })
    const results = await Promise.allSettled([12, 13, 14].map((n) => group.add(n)))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(Error)
    expect(writes).toEqual([[12, 13, 14], [12], [13], [14]])
  })

  it('fails every item when the store is down, and keeps working afterwards', async () => {
    let down = true
    const written: number[] = []
    const group = createGroupCommit<number>(async (items) => {
      if (down) throw new Error('database unavailable')
      written.push(...items)
    })
    const failed = await Promise.allSettled([1, 2].map((n) => group.add(n)))
    expect(failed.every((r) => r.status === 'rejected')).toBe(true)
    down = false
    await group.add(3)
    expect(written).toEqual([3])
  })
})
