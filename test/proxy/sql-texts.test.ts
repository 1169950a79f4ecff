import { afterEach, expect, it } from 'vitest'
import { preparedSqlTexts } from '../../src/db/statement-cache.ts'
import { phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

let h: ProxyHarness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

// Statements are prepared once per SQL text and kept (src/db/statement-cache.ts). A value written into the text — the
// proxy's invalidation generation put the time there — made a new statement every millisecond, each prepared and kept,
// pushing the service's own statements out of the cache.
it("the proxy's writes and reads prepare the same SQL whatever the time: no clock value in the text", async () => {
  h = await proxyHarness()
  const sqlite = h.rt.store.sqlite!
  for (let i = 0; i < 3; i++) {
    expect((await h.call(phoneCall(`+91987654321${i}`))).status).toBe(200)
    expect((await h.request('/v1/conversations?limit=5')).status).toBe(200)
    await h.clock.advance(1_234)
  }
  const texts = preparedSqlTexts(sqlite)
  expect(texts.length).toBeGreaterThan(5)
  expect(texts.filter((sql) => /\b\d{10,}\b/.test(sql))).toEqual([])
})
