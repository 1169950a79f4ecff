import { afterEach, expect, it } from 'vitest'
import { buildDailyReport, renderDailyReport } from '../../src/reports/index.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { DAY, DAY_START, insertConversations, TZ, type SeedConversation } from './seed.ts'

let rt: TestRuntime | undefined
afterEach(async () => {
  await rt?.close()
  rt = undefined
})

/**
 * The text part's bar charts pad each label to one column. Padded by code points, a label of CJK characters or emoji
 * (two columns each on a terminal or in a monospaced mail view) pushed its bar right, and an accent written as a
 * combining mark pulled it left.
 */
it('the text part\'s bars line up after wide characters, emoji and combining marks', async () => {
  rt = await createTestRuntime()
  const intents = ['interested', 'interested', 'interested', '興味あり', '興味あり', '🎉yes', 'cafe\u0301', '一二三四五六七八九十一二三四五六七八九十']
  await insertConversations(rt, intents.map((intent, i): SeedConversation => ({
    conversation_id: `conv_${i}`, agent_id: 101, contact_number: `+9198000000${String(i).padStart(2, '0')}`, status: 'completed', duration_seconds: 30,
    ended_at: DAY_START + 60_000 * (i + 1), trace_id: `tr_${i}`, results: { intent },
  })))
  const { text } = renderDailyReport(await buildDailyReport(rt, { date: DAY, timezone: TZ }))
  const lines = text.split('\n')
  const at = lines.indexOf('  intent (reported by 8):')
  // The widest label is the cut one: 13 CJK characters and `…`, 27 columns, padded to the column's 28.
  expect(lines.slice(at + 1, at + 6).map((l) => l.slice(0, l.indexOf('#')))).toEqual([
    `    interested${' '.repeat(18)} `,
    `    興味あり${' '.repeat(20)} `,
    `    🎉yes${' '.repeat(23)} `,
    `    cafe\u0301${' '.repeat(24)} `,
    `    一二三四五六七八九十一二三…  `,
  ])
})
