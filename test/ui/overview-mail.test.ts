import { afterEach, expect, it } from 'vitest'
import { insertMailLog, updateMailLog } from '../../src/reports/mail-log.ts'
import { cookieHeader, login, startUiServer, TOKEN, type UiServer } from './helpers.ts'

/** The overview's mail card: mail written to the outbox folder (no SMTP_URL) was counted "sent". */
let ui: UiServer | undefined
afterEach(async () => {
  await ui?.close()
  ui = undefined
})

async function mailCard(u: UiServer): Promise<string> {
  const base = u.server.url
  const { jar } = await login(base)
  const page = await (await fetch(`${base}/ui/overview/live`, { headers: { cookie: cookieHeader(jar) } })).text()
  return /Mail \(7 days\)[\s\S]{0,400}/.exec(page)?.[0] ?? ''
}

it('says mail written to the outbox folder is written, not sent; with both, how many of them were written', async () => {
  ui = await startUiServer({ ADMIN_TOKEN: TOKEN })
  const rt = ui.server.rt
  for (const id of ['mail_w1', 'mail_w2']) {
    await insertMailLog(rt, { id, recipients: ['ops@example.com'], subject: 'report' })
    await updateMailLog(rt, id, { status: 'written', attempts: 1, error: null })
  }
  let card = await mailCard(ui)
  expect(card).toContain('2 written')
  expect(card).toContain('to the outbox folder, not sent (no SMTP_URL)')
  expect(card).not.toContain('sent<')
  await insertMailLog(rt, { id: 'mail_s1', recipients: ['ops@example.com'], subject: 'report' })
  await updateMailLog(rt, 'mail_s1', { status: 'sent', attempts: 1, error: null })
  card = await mailCard(ui)
  expect(card).toContain('3 sent')
  expect(card).toContain('2 of them written to the outbox')
})
