import { afterAll, beforeAll, expect, it } from 'vitest'
import type { H3 } from 'h3'
import { createApp } from '../../src/server.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { TOKEN } from './helpers.ts'

/**
 * /ui/calls listed the newest 100 calls and stopped: no link to older ones, nothing saying there were more. It pages
 * as the events page does, by a keyset cursor — every call once, in order, even among calls created the same
 * millisecond (a batch's), and the filters kept from page to page.
 */
describeEachDialect('calls page: keyset pages', (dialect) => {
  let rt: TestRuntime
  let app: H3
  const AT = Date.parse('2026-03-02T05:00:00Z')
  beforeAll(async () => {
    rt = await createTestRuntime({ dialect, env: { ADMIN_TOKEN: TOKEN } })
    app = createApp(rt)
    const rows = []
    // 230 initiated calls, 150 of them created at the same millisecond, ids in no particular order of insertion;
    // 20 failed calls among them, which the status filter leaves out.
    for (let i = 0; i < 250; i++) {
      const id = `call_${String((i * 37) % 250).padStart(3, '0')}`
      const at = i < 150 ? AT : AT - (i - 149) * 1000
      rows.push({
        id, tenant: 't', agent_id: 101, customer_phone: '+919876543210', idempotency_key: `key_${id}`, trace_id: null, conversation_id: null,
        previous_conversation_id: null, scheduled_for: null, parameters: '[]', retry_context: null, metadata: null, recipe: 'nightly', campaign: null,
        status: i % 12 === 5 ? 'failed' : 'initiated', error: null, created_at: at, updated_at: at,
      })
    }
    await rt.store.db.insertInto('calls').values(rows).execute()
  })
  afterAll(() => rt.close())

  const get = async (path: string) => {
    const res = await app.fetch(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${TOKEN}` } }))
    expect(res.status, path).toBe(200)
    return res.text()
  }
  const decode = (href: string) => href.replaceAll('&amp;', '&')
  /** The ids of a page's ledger rows (each number links to its call's chain), and its "Older" link. */
  const pageOf = (body: string) => ({
    ids: [...body.matchAll(/<a href="ui\/calls\?[^"]*chain=([^"&]+)"/g)].map((m) => decodeURIComponent(m[1]!)),
    older: /<a href="([^"]+)" rel="next">Older →<\/a>/.exec(body)?.[1],
  })

  it('walks every call once, newest first (ties by id), with the filters kept, and says there are more', async () => {
    const expected = (await rt.store.db.selectFrom('calls').select('id').where('status', '=', 'initiated').orderBy('created_at', 'desc').orderBy('id', 'desc').execute()).map((r) => r.id)
    expect(expected).toHaveLength(229)
    const seen: string[] = []
    let path: string | undefined = '/ui/calls?recipe=nightly&status=initiated'
    let pages = 0
    while (path) {
      const body = await get(path)
      const { ids, older } = pageOf(body)
      if (pages === 0) expect(body).toContain('The newest 100 calls; older ones are on the next page.')
      seen.push(...ids)
      pages++
      if (older) {
        const next = new URL(decode(older), 'http://localhost')
        expect(next.searchParams.get('recipe')).toBe('nightly')
        expect(next.searchParams.get('status')).toBe('initiated')
        expect(ids).toHaveLength(100)
      }
      path = older ? `/${decode(older)}` : undefined
      expect(pages).toBeLessThan(10)
    }
    expect(pages).toBe(3)
    expect(seen).toEqual(expected)
  })

  it('has no "Older" link when every call fits on the page, and a cursor it did not make starts from the top', async () => {
    const body = await get('/ui/calls?status=failed')
    expect(pageOf(body).ids).toHaveLength(21)
    expect(pageOf(body).older).toBeUndefined()
    expect(body).not.toContain('older ones are on the next page')
    for (const before of ['not-a-cursor', Buffer.from('[1e21,"x"]').toString('base64url'), Buffer.from('[5,"a\\u0000b"]').toString('base64url')]) {
      expect(pageOf(await get(`/ui/calls?status=failed&before=${before}`)).ids, before).toHaveLength(21)
    }
  })
})
