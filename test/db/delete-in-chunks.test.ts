import { describe, expect, it } from 'vitest'
import { deleteInChunks, nextChunkSize, PURGE_CHUNK_TARGET_MS, PURGE_RUN_MS, purgeRun } from '../../src/db/delete-in-chunks.ts'

/**
 * A fake table of `rows` rows whose deletion costs `msPerRow` on an injected clock; the purge's pauses advance the
 * same clock. Returns the chunk sizes asked for and the pauses taken.
 */
function fakeTable(rows: number, msPerRow: number) {
  let t = 0
  let left = rows
  const asked: number[] = []
  const pauses: number[] = []
  return {
    asked,
    pauses,
    left: () => left,
    options: {
      now: () => t,
      async sleep(ms: number): Promise<void> {
        pauses.push(ms)
        t += ms
      },
    },
    async deleteChunk(limit: number): Promise<number> {
      asked.push(limit)
      const n = Math.min(limit, left)
      left -= n
      t += n * msPerRow
      return n
    },
  }
}

describe('deleteInChunks', () => {
  it('sizes chunks to take about the target time, and pauses 29 times as long after each', async () => {
    // 0.1 ms a row: chunks settle at 40 rows (4 ms).
    const table = fakeTable(10_000, 0.1)
    expect(await deleteInChunks((limit) => table.deleteChunk(limit), table.options)).toEqual({ rows: 10_000, more: false })
    expect(table.left()).toBe(0)
    expect(table.asked.slice(0, 3)).toEqual([200, 40, 40])
    expect(table.pauses[0]).toBe(250) // 29 × 20 ms, capped
    expect(table.pauses[1]).toBeCloseTo(29 * PURGE_CHUNK_TARGET_MS)
  })

  it('grows chunks at most twofold when rows are cheap, and keeps them within bounds', async () => {
    expect(nextChunkSize(200, 0)).toBe(400)
    expect(nextChunkSize(200, 0.01)).toBe(400)
    expect(nextChunkSize(4_000, 0.01)).toBe(5_000)
    expect(nextChunkSize(200, 1_000)).toBe(20)
  })

  it('stops at a chunk short of its limit, and at the deadline with more to do', async () => {
    const short = fakeTable(5, 1)
    expect(await deleteInChunks((limit) => short.deleteChunk(limit), { ...short.options, chunk: 2 })).toEqual({ rows: 5, more: false })
    expect(short.asked).toEqual([2, 2, 2])

    // 1 ms a row with fixed chunks of 100: each chunk 100 ms, each pause the 250 ms cap.
    const big = fakeTable(1_000_000, 1)
    const result = await deleteInChunks((limit) => big.deleteChunk(limit), { ...big.options, chunk: 100 })
    expect(result.more).toBe(true)
    expect(big.pauses.every((ms) => ms === 250)).toBe(true)
    // Chunks run while the deadline (PURGE_RUN_MS) has not passed: 350 ms a cycle.
    expect(result.rows).toBe(Math.ceil(PURGE_RUN_MS / 350) * 100)
  })

  it('one deadline for all the deletions of a run', async () => {
    const table = fakeTable(1_000_000, 1)
    const run = purgeRun({ ...table.options, chunk: 100 })
    const first = await deleteInChunks((limit) => table.deleteChunk(limit), run)
    const second = await deleteInChunks((limit) => table.deleteChunk(limit), run)
    expect(first.more).toBe(true)
    expect(second).toEqual({ rows: 0, more: true })
  })

  it('ends after the chunk under way once its signal is aborted (the service stopping)', async () => {
    const table = fakeTable(1_000_000, 0.1)
    const stopping = new AbortController()
    const result = await deleteInChunks(
      async (limit) => {
        if (table.asked.length === 3) stopping.abort()
        return table.deleteChunk(limit)
      },
      { ...table.options, signal: stopping.signal },
    )
    expect(result).toEqual({ rows: 200 + 40 + 40 + 40, more: true })
  })

  it('waits at beforeChunk before every chunk (the purges wait there while the receiver takes a burst)', async () => {
    const table = fakeTable(100, 0.1)
    const order: string[] = []
    const result = await deleteInChunks(
      async (limit) => {
        order.push(`delete ${limit}`)
        return table.deleteChunk(limit)
      },
      {
        ...table.options,
        chunk: 40,
        async beforeChunk() {
          order.push('wait')
        },
      },
    )
    expect(result).toEqual({ rows: 100, more: false })
    expect(order).toEqual(['wait', 'delete 40', 'wait', 'delete 40', 'wait', 'delete 40'])
  })
})
