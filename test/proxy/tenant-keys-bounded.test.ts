import { afterEach, expect, it, vi } from 'vitest'
import { tenantOf } from '../../src/calls/tenant.ts'
import { DEMO_TENANTS } from '../../src/sandbox/index.ts'
import { MAINTENANCE_INTERVAL_MS, startProxyMaintenance } from '../../src/proxy/mount.ts'
import { KEY_ROW_RETENTION_MS } from '../../src/proxy/tenant-keys.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { ACME, GLOBEX, phoneCall, proxyHarness, type ProxyHarness } from './helpers.ts'

describeEachDialect('proxy: tenant_keys stays bounded', (dialect) => {
  let h: ProxyHarness | undefined
  const stops: Array<() => void> = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop()
    await h?.close()
    h = undefined
  })

  const rows = (h: ProxyHarness) => h.rt.store.db.selectFrom('tenant_keys').select(['tenant', 'accepted_at', 'rejected_at']).orderBy('tenant').execute()

  it('keys the provider refuses and never accepted leave no row; one repeated within the key window is refused without asking again', async () => {
    h = await proxyHarness({ dialect })
    for (let i = 0; i < 30; i++) {
      const res = await h.request('/v1/conversations?limit=1', { key: `sk_junk_${i}` })
      expect(res.status).toBe(401)
    }
    expect(await rows(h)).toEqual([])

    const asked = h.sandbox.stats().requests
    for (const init of [{}, { method: 'HEAD' }]) {
      const again = await h.request('/v1/conversations/abc_1', { key: 'sk_junk_3', ...init })
      expect(again.status).toBe(401)
      expect(again.headers.get('x-cache')).toBe('BYPASS')
      if (!init.method) expect(await again.json()).toEqual({ error: { message: 'invalid or missing api key', type: 'authentication_error' } })
    }
    expect(h.sandbox.stats().requests).toBe(asked)
    // So is a write (0.28.1: a call was sent to the provider, and its refusal recorded in the calls ledger).
    expect((await h.call(phoneCall('+919876543210'), 'sk_junk_3')).status).toBe(401)
    expect(h.sandbox.stats().requests).toBe(asked)
    expect(await h.rt.store.db.selectFrom('calls').select('id').execute()).toEqual([])
    expect(await rows(h)).toEqual([])

    // Past the window the provider is asked again (a key enabled meanwhile works from then on).
    await h.clock.advance(61_000)
    expect((await h.request('/v1/conversations?limit=1', { key: 'sk_junk_3' })).status).toBe(401)
    expect(h.sandbox.stats().requests).toBe(asked + 1)
    expect(await rows(h)).toEqual([])
  })

  it('a key accepted once and then disabled keeps its refusal on record, and good keys are never refused locally', async () => {
    const tenants = DEMO_TENANTS.map((t) => ({ ...t, agents: [...t.agents] }))
    h = await proxyHarness({ dialect, sandbox: { tenants } })
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(200)
    expect((await h.request('/v1/conversations?limit=1', { key: GLOBEX })).status).toBe(200)
    tenants.find((t) => t.apiKey === ACME)!.disabled = true
    await h.clock.advance(61_000)
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(401)
    expect((await h.request('/v1/conversations?limit=1', { key: GLOBEX })).status).toBe(200)
    const stored = await rows(h)
    expect(stored.find((r) => r.tenant === tenantOf(ACME))).toMatchObject({ accepted_at: expect.any(Number), rejected_at: h.clock.now() })
    expect(stored.find((r) => r.tenant === tenantOf(GLOBEX))).toMatchObject({ rejected_at: null })
    // Nothing cached is served to it, and no STALE answer either once the provider is down.
    await h.stopSandbox()
    expect((await h.request('/v1/conversations?limit=1')).status).toBe(502)
  })

  it('the proxy maintenance sweeps rows of keys out of use; a key that comes back is confirmed upstream again', async () => {
    h = await proxyHarness({ dialect })
    expect((await h.request('/v1/conversations?limit=2')).status).toBe(200)
    await h.clock.advance(KEY_ROW_RETENTION_MS - 3_600_000)
    expect((await h.request('/v1/conversations?limit=2', { key: GLOBEX })).status).toBe(200)
    // A row from before refusals stopped making rows: a key never accepted.
    await h.rt.store.db.insertInto('tenant_keys').values({ tenant: tenantOf('sk_old_junk'), accepted_at: null, rejected_at: h.clock.now() }).execute()
    expect(await rows(h)).toHaveLength(3)

    stops.push(startProxyMaintenance(h.rt))
    await h.clock.advance(2 * 3_600_000)
    // The sweep runs on the clock's timer and its statements take real time (Postgres): a tick that began early in the
    // advance reads its time then and sweeps nothing yet, and schedules the next only once done — so keep moving on.
    await vi.waitFor(async () => {
      await h!.clock.advance(MAINTENANCE_INTERVAL_MS)
      expect((await rows(h!)).map((r) => r.tenant)).toEqual([tenantOf(GLOBEX)])
    }, { timeout: 10_000, interval: 50 })

    const back = await h.request('/v1/conversations?limit=2')
    expect(back.status).toBe(200)
    expect(back.headers.get('x-cache')).toBe('MISS')
    expect((await rows(h)).map((r) => r.tenant).sort()).toEqual([tenantOf(ACME), tenantOf(GLOBEX)].sort())
  })
})
