import { afterEach, expect, it } from 'vitest'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from './helpers.ts'

/**
 * The Mail page previews yesterday's report by default — yesterday by the calendar of RECIPES_TIMEZONE, as the daily
 * report means it. 24 hours back is another day around a daylight-saving change.
 */
let ui: UiServer | undefined
afterEach(async () => {
  await ui?.close()
  ui = undefined
})

it.each([
  // 00:30 in New York the day after the spring-forward Sunday: 24 hours back is still Saturday.
  ['2026-03-09T04:30:00Z', '2026-03-08'],
  // 23:30 on the fall-back Sunday: 24 hours back is still that Sunday.
  ['2026-11-02T04:30:00Z', '2026-10-31'],
])('at %s the preview defaults to %s', async (now, day) => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN, RECIPES_TIMEZONE: 'America/New_York' }, { clockStart: now })
  const session = await login(ui.server.url)
  const res = await fetch(`${ui.server.url}/ui/mail`, { headers: { cookie: cookieHeader(session.jar) } })
  expect(res.status).toBe(200)
  expect(await res.text()).toContain(`<input type="date" name="date" value="${day}">`)
})
