import { parse } from 'csv-parse/sync'
import { unzipSync } from 'fflate'
import { afterEach, expect, it } from 'vitest'
import { liveEffects } from '../../src/effects.ts'
import { PLAIN_CSV_MAX_BYTES } from '../../src/reports/csv-attachment.ts'
import { sendDailyReport } from '../../src/reports/index.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, DAY_START, FORMULA, insertConversations, TZ, type SeedConversation } from './seed.ts'
import { cliEnv, runCli } from '../webhooks/helpers.ts'
import { startSmtp } from './smtp.ts'

/**
 * A day of 100,000 conversations made a 13 MiB CSV: an 18 MB message base64-encoded, over the 10 MB many relays take
 * and, at 150,000 a day, over Gmail's and Microsoft 365's 25 MB — the day's report refused for good, every day. Past
 * PLAIN_CSV_MAX_BYTES the CSV goes zipped; below it, it stays a plain CSV (test/reports/mail.test.ts).
 */
const NOTE = 'n'.repeat(3_000)
const N = Math.ceil(PLAIN_CSV_MAX_BYTES / NOTE.length) + 50

let rt: TestRuntime | undefined
let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
afterEach(async () => {
  await rt?.close()
  await smtp?.close()
  rt = smtp = undefined
})

it('a CSV over the bound is attached zipped — the same CSV inside, formulas still neutralised — and the mail says so', async () => {
  smtp = await startSmtp()
  rt = await createTestRuntime({
    env: { VOICE_API_KEY: 'sk_live_report', VOICE_API_BASE_URL: 'http://127.0.0.1:9', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, REPORT_TO: 'ops@example.com' },
    clock: createManualClock('2026-11-21T02:30:00Z'),
  })
  const day: SeedConversation[] = Array.from({ length: N }, (_, i) => ({
    conversation_id: `conv_${String(i).padStart(5, '0')}`, agent_id: 101, contact_number: `+9198${String(i).padStart(8, '0')}`, status: 'completed',
    duration_seconds: 30, ended_at: DAY_START + 60_000 + i * 1_000, trace_id: `tr_${i}`, results: { notes: i === 0 ? FORMULA : NOTE },
  }))
  for (let i = 0; i < day.length; i += 500) await insertConversations(rt, day.slice(i, i + 500))

  const effects = liveEffects()
  const result = await sendDailyReport(rt, {}, effects)
  expect(result).toMatchObject({ status: 'sent', date: DAY, attachment: { filename: 'conversations-2026-11-20.zip', zipped: true, csvBytes: expect.any(Number), bytes: expect.any(Number) } })
  expect(result.attachment.csvBytes).toBeGreaterThan(PLAIN_CSV_MAX_BYTES)
  expect(result.attachment.bytes).toBeLessThan(result.attachment.csvBytes / 10)
  const [mail] = smtp.messages
  expect(smtp.raw[0]!.length).toBeLessThan(1_000_000)
  expect(mail!.attachments.map((a) => [a.filename, a.contentType])).toEqual([['conversations-2026-11-20.zip', 'application/zip']])
  const entries = unzipSync(new Uint8Array(mail!.attachments[0]!.content))
  expect(Object.keys(entries)).toEqual(['conversations-2026-11-20.csv'])
  const csv = Buffer.from(entries['conversations-2026-11-20.csv']!)
  expect(csv.length).toBeGreaterThan(PLAIN_CSV_MAX_BYTES)
  expect([...csv.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
  const rows = parse(csv, { bom: true, columns: true }) as Array<Record<string, string>>
  expect(rows).toHaveLength(N)
  expect(rows.find((r) => r.conversation_id === 'conv_00000')!['result.notes']).toBe(`'${FORMULA}`)
  const said = /Every conversation of the day is in the attached CSV, zipped \(\d+\.\d MB unzipped: too large to attach as it is\)\./
  expect(mail!.text).toMatch(said)
  expect(mail!.html).toMatch(said)
  expect(effects.plan).toEqual([expect.objectContaining({ kind: 'mail', attachments: ['conversations-2026-11-20.zip'] })])

  // What `report send --dry-run` says it would attach.
  const dry = await runCli(['report', 'send', '--dry-run', '--date', DAY, '--timezone', TZ], cliEnv(rt))
  expect(dry.code, dry.err).toBe(0)
  // A zip under a megabyte in KB (it read `0.0 MB`).
  expect(dry.out).toMatch(new RegExp(`^  attached: conversations-2026-11-20\\.zip \\(${N.toLocaleString('en-US')} rows; zipped: \\d+\\.\\d MB of CSV in (\\d+\\.\\d MB|\\d+ KB)\\)$`, 'm'))
})
