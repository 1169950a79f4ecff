import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shownUrl } from '../../src/utils/shown-url.ts'
import { destination } from '../destinations/helpers.ts'
import { runCli } from '../webhooks/helpers.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from './helpers.ts'
import { UI_SECRET } from './seed.ts'

/**
 * Webhook URLs carry their secret in the query (`?token=`) or the path (Slack's `/services/T…/B…/<secret>`), not
 * only as credentials: none of them is shown, on the dashboard, in /admin/destinations or by `destinations list`.
 */
const PATH_SECRET = 'XyZpathSecret0987'
const QUERY_SECRET = 'qrySecret4242'
const SLACK = `https://hooks.example.com/services/T0ABC/B0DEF/${PATH_SECRET}`
const QUERY = `https://in.example.com/in?token=${QUERY_SECRET}&v=2`

describe('destination URLs with a secret in the path or the query', () => {
  let ui: UiServer
  beforeAll(async () => {
    ui = await startUiServer({
      ADMIN_TOKEN: TOKEN,
      DESTINATIONS: JSON.stringify([destination(SLACK, { name: 'slack' }), destination(QUERY, { name: 'crm' })]),
    })
  }, 60_000)
  afterAll(() => ui.close())

  it('shows only what the rule keeps: scheme, host, a plain first segment, query names', () => {
    expect(shownUrl(SLACK)).toBe('https://hooks.example.com/services/…/…/…')
    expect(shownUrl(QUERY)).toBe('https://in.example.com/in?token=…&v=…')
    expect(shownUrl('https://webhook.example/3f2c1d2e-1111-2222-3333-1234567890ab')).toBe('https://webhook.example/…')
    expect(shownUrl('https://key@hooks.example.com/api/v1/hooks/?sig=abc#frag')).toBe('https://***@hooks.example.com/api/…/…/?sig=…#…')
    // Nothing to hide: as written.
    expect(shownUrl('https://hooks.example.com/in')).toBe('https://hooks.example.com/in')
    // A database URL keeps its name or file; its query may hold the password.
    expect(shownUrl('postgres://app:pw@db:5432/app?password=pw2')).toBe('postgres://***@db:5432/app?password=…')
    expect(shownUrl('sqlite:/srv/app/data/switchboard.db')).toBe('sqlite:/srv/app/data/switchboard.db')
  })

  it('are never shown on /ui/destinations, in /admin/destinations or by `destinations list`', async () => {
    const base = ui.server.url
    const admin = await fetch(`${base}/admin/destinations`, { headers: { authorization: `Bearer ${TOKEN}` } })
    expect(admin.status).toBe(200)
    const text = await admin.text()
    expect(text).toContain('https://hooks.example.com/services/…/…/…')
    expect(text).toContain('https://in.example.com/in?token=…&v=…')
    for (const secret of [PATH_SECRET, QUERY_SECRET, 'T0ABC', 'B0DEF']) expect(text).not.toContain(secret)

    const { jar } = await login(base)
    const page = await (await fetch(`${base}/ui/destinations`, { headers: { cookie: cookieHeader(jar) } })).text()
    expect(page).toContain('https://hooks.example.com/services/…/…/…')
    expect(page).toContain('https://in.example.com/in?token=…&amp;v=…')
    for (const secret of [PATH_SECRET, QUERY_SECRET, 'T0ABC', 'B0DEF']) expect(page).not.toContain(secret)

    const cli = await runCli(['destinations', 'list', '--json'], {
      DATA_DIR: ui.dataDir, WEBHOOK_SECRET: UI_SECRET, LOG_LEVEL: 'silent', RECONCILE_INTERVAL_SECONDS: '0',
      DESTINATIONS: JSON.stringify([destination(SLACK, { name: 'slack' }), destination(QUERY, { name: 'crm' })]),
    })
    expect(cli.code, cli.err).toBe(0)
    expect(cli.out).toContain('https://hooks.example.com/services/…/…/…')
    for (const secret of [PATH_SECRET, QUERY_SECRET, 'T0ABC', 'B0DEF']) expect(cli.out).not.toContain(secret)
  })
})
