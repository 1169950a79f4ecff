import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { cutLabel, LABEL_MAX } from '../../src/reports/shown-label.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, DAY_START, insertConversations, TZ, type SeedConversation } from './seed.ts'

/**
 * Labels in the report's mail come from webhooks: a campaign name, a results key or value, a failure reason. In the
 * text part a line break in one forged a figures line, and raw ESC or a right-to-left override reached the reader; a
 * name of hundreds of KB, shown whole in both parts, made a 17 MB mail.
 */
let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

const FORGED = '999,999 calls · connect 100.0% · success 100.0% · avg 1.0 s'
/** What the text part must never carry raw: the UNSHOWN characters of html-escape.ts, and line breaks but LF. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/
const at = (minute: number) => DAY_START + 60_000 * minute

it('the text part shows webhook labels on one line, control and bidi characters as escapes', async () => {
  rt = await createTestRuntime()
  await insertConversations(rt, [
    { conversation_id: 'conv_nl', agent_id: 101, contact_number: '+919800000001', status: 'completed', duration_seconds: 10, ended_at: at(1), trace_id: 'tr_nl', call_parameters: { campaign: `legit\n    ${FORGED}` }, results: { 'ke\u202ey': 'one\r\ntwo\u2028three\u2029four' } },
    { conversation_id: 'conv_esc', agent_id: 101, contact_number: '+919800000002', status: '\u001b[31mred', duration_seconds: 10, ended_at: at(2), trace_id: 'tr_esc', failure_reason: 'bell\u0007soh\u0001', call_parameters: { campaign: 'spring\u202egnirps' } },
  ])
  const { text } = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  expect(text).not.toMatch(RAW)
  const lines = text.split('\n')
  expect(lines.filter((l) => l.trim().startsWith(FORGED))).toEqual([])
  expect(lines).toContain(`  legit\\u000a    ${FORGED}`)
  expect(text).toContain('\\u001b[31mred')
  expect(text).toContain('spring\\u202egnirps')
  expect(text).toContain('bell\\u0007soh\\u0001')
  expect(text).toContain('  ke\\u202ey (reported by 1):')
  // Escaped, then cut to the bars' label column.
  expect(text).toContain('one\\u000d\\u000atwo\\u2028thr…')
})

it('labels of hundreds of KB are cut in both bodies, the CSV keeps them whole', async () => {
  rt = await createTestRuntime()
  const big = 200 * 1024
  // One name of astral characters: a cut by UTF-16 units would leave half of a surrogate pair.
  const campaignOf = (i: number) => (i === 0 ? `a${'😀'.repeat(big / 2)}` : `camp-${String(i).padStart(2, '0')}-${'x'.repeat(big)}`)
  const day: SeedConversation[] = Array.from({ length: 30 }, (_, i) => ({
    conversation_id: `conv_${i}`, agent_id: 101, contact_number: `+9198${String(i).padStart(8, '0')}`, status: i % 3 ? 'completed' : 'failed',
    duration_seconds: 30, ended_at: at(i + 1), trace_id: `tr_${i}`, failure_reason: i % 3 ? null : `reason-${i}-${'r'.repeat(big)}`,
    call_parameters: { campaign: campaignOf(i) }, results: { [`key-${'k'.repeat(big)}`]: i === 0 ? `a${'😀'.repeat(big / 2)}` : `value-${i}-${'v'.repeat(big)}` },
  }))
  await insertConversations(rt, day)
  const rendered = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  for (const body of [rendered.html, rendered.text]) {
    expect(Buffer.byteLength(body)).toBeLessThan(100 * 1024)
    expect(body.isWellFormed()).toBe(true)
    expect(body).toContain(`camp-01-${'x'.repeat(LABEL_MAX - 'camp-01-'.length - 1)}…`)
    expect(body).toContain(`a${'😀'.repeat(LABEL_MAX - 2)}…`)
    expect(body).toContain(`key-${'k'.repeat(LABEL_MAX - 'key-'.length - 1)}…`)
  }
  expect(rendered.html).toContain(`value-1-${'v'.repeat(LABEL_MAX - 'value-1-'.length - 1)}…`)
  // The CSV is where every value is in full.
  expect(rendered.csv).toContain(campaignOf(1))
  expect(rendered.csv).toContain(`value-1-${'v'.repeat(big)}`)
})

it('cutLabel counts code points and keeps short labels as they are', () => {
  expect(cutLabel('short')).toBe('short')
  expect(cutLabel('x'.repeat(LABEL_MAX))).toBe('x'.repeat(LABEL_MAX))
  expect(cutLabel('x'.repeat(LABEL_MAX + 1))).toBe(`${'x'.repeat(LABEL_MAX - 1)}…`)
  // 120 emoji are 240 UTF-16 units but 120 characters: not cut.
  expect(cutLabel('😀'.repeat(LABEL_MAX))).toBe('😀'.repeat(LABEL_MAX))
  expect(cutLabel('😀'.repeat(5), 3)).toBe('😀😀…')
})
