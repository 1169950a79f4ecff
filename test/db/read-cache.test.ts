import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/db/connect.ts'
import { LARGE_READ_CACHE_KIB, withLargeReadCache } from '../../src/db/read-cache.ts'

/** A large read gets a page cache that holds what it reads, and the connection gets its own size back after. */
describe('withLargeReadCache [sqlite]', () => {
  let dir: string | undefined
  let store: Store | undefined
  afterEach(async () => {
    await store?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
    dir = store = undefined
  })

  const open = async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-read-cache-'))
    store = await openStore(`sqlite:${join(dir, 'db.sqlite')}`)
    return store
  }
  const cacheSize = (s: Store) => s.sqlite!.pragma('cache_size', { simple: true }) as number

  it('raises the cache for the read and puts the size back after it', async () => {
    const s = await open()
    const before = cacheSize(s)
    expect(-before).toBeLessThan(LARGE_READ_CACHE_KIB)
    const during = await withLargeReadCache(s, async () => cacheSize(s))
    expect(during).toBe(-LARGE_READ_CACHE_KIB)
    expect(cacheSize(s)).toBe(before)
  })

  it('puts the size back when the read fails', async () => {
    const s = await open()
    const before = cacheSize(s)
    await expect(withLargeReadCache(s, async () => Promise.reject(new Error('read failed')))).rejects.toThrow('read failed')
    expect(cacheSize(s)).toBe(before)
  })

  it('keeps the cache raised until the last of overlapping reads ends', async () => {
    const s = await open()
    const before = cacheSize(s)
    let endFirst!: () => void
    const first = withLargeReadCache(s, () => new Promise<void>((resolve) => (endFirst = resolve)))
    const second = withLargeReadCache(s, async () => cacheSize(s))
    expect(await second).toBe(-LARGE_READ_CACHE_KIB)
    // The first read is still under way: the second one's end must not shrink the cache under it.
    expect(cacheSize(s)).toBe(-LARGE_READ_CACHE_KIB)
    endFirst()
    await first
    expect(cacheSize(s)).toBe(before)
  })

  it('never lowers a cache configured larger (a size in pages counts by its bytes)', async () => {
    const s = await open()
    const pageSize = s.sqlite!.pragma('page_size', { simple: true }) as number
    const largerInPages = Math.ceil((LARGE_READ_CACHE_KIB * 2 * 1024) / pageSize)
    s.sqlite!.pragma(`cache_size = ${largerInPages}`)
    expect(await withLargeReadCache(s, async () => cacheSize(s))).toBe(largerInPages)
    expect(cacheSize(s)).toBe(largerInPages)
  })

  it('leaves Postgres (no SQLite handle) alone', async () => {
    expect(await withLargeReadCache({ sqlite: undefined }, async () => 'read')).toBe('read')
  })
})
