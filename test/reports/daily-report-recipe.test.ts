import { afterAll, afterEach, expect, it } from 'vitest'
import { createRecipeEngine } from '../../src/recipes/engine.ts'
import { listRuns } from '../../src/recipes/runner.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { startSmtp } from './smtp.ts'
import { sendDailyReport } from '../../src/reports/index.ts'
import { liveEffects } from '../../src/effects.ts'
import { createKvState, recipeStateNamespace } from '../../src/recipes/state.ts'

const subject = (date: string) => `switchboard daily report — ${date} (Asia/Kolkata)`

/**
 * The shipped daily-report recipe reports the day before its tick's day (in the recipe's zone), so a tick
 * run late — caught up after an outage that spanned midnight — still reports the day it was due for.
 * 2026-11-22 is a Sunday; Asia/Kolkata is UTC+05:30 all year.
 */
describeEachDialect('shipped daily-report recipe: the day reported', (dialect) => {
  const shipped = shippedRecipesDir('daily-report')
  afterAll(() => shipped.cleanup())
  let rt: TestRuntime | undefined
  let smtp: Awaited<ReturnType<typeof startSmtp>> | undefined
  const stops: Array<() => Promise<void>> = []
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop()
    await rt?.close()
    await smtp?.close()
    rt = smtp = undefined
  })

  async function setup(startIso: string, env: Record<string, string> = {}, refuse?: NonNullable<Parameters<typeof startSmtp>[0]>['refuse']) {
    smtp = await startSmtp({ refuse })
    const clock = createManualClock(startIso)
    rt = await createTestRuntime({
      dialect,
      clock,
      env: {
        VOICE_API_KEY: 'sk_live_report',
        VOICE_API_BASE_URL: 'http://127.0.0.1:9',
        RECIPES_DIR: shipped.dir,
        RECIPES_TIMEZONE: 'Asia/Kolkata',
        SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
        REPORT_TO: 'ops@example.com',
        ...env,
      },
    })
    return { rt, clock, smtp }
  }

  it('down Mon 07:00 → Tue 07:30: the catch-up of Monday\'s tick reports Sunday, Tuesday\'s tick Monday', async () => {
    // Monday 2026-11-23 07:00 IST: the service has seen the schedule, then goes down.
    const { rt, clock, smtp } = await setup('2026-11-23T01:30:00Z')
    const before = createRecipeEngine(rt)
    stops.push(() => before.stop())
    await before.start()
    await before.stop()

    // Back on Tuesday 07:30 IST: Monday 08:00's tick is caught up now, Tuesday's comes at 08:00.
    await clock.advanceTo(Date.parse('2026-11-24T02:00:00Z'))
    const after = createRecipeEngine(rt)
    stops.push(() => after.stop())
    await after.start()
    await after.idle()
    await clock.advanceTo(Date.parse('2026-11-24T02:30:00Z'))
    await after.idle()

    expect(smtp.messages.map((m) => m.subject)).toEqual([subject('2026-11-22'), subject('2026-11-23')])
    const runs = (await listRuns(rt, { recipe: 'daily-report' })).reverse()
    expect(runs.map((r) => [r.trigger, r.status, (r.summary as { date: string }).date])).toEqual([
      ['catchup', 'succeeded', '2026-11-22'],
      ['cron', 'succeeded', '2026-11-23'],
    ])
  })

  it('a cron trigger whose tick was yesterday reports the day before the tick; a manual run reports yesterday', async () => {
    // Tuesday 2026-11-24 07:30 IST, running Monday 08:00 IST's tick.
    const { rt, smtp } = await setup('2026-11-24T02:00:00Z')
    const engine = createRecipeEngine(rt)
    stops.push(() => engine.stop())
    const late = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-23T02:30:00Z') } })
    expect(late.summary).toMatchObject({ date: '2026-11-22', mailed: true })
    const manual = await engine.run('daily-report')
    expect(manual.summary).toMatchObject({ date: '2026-11-23', mailed: true })
    expect(smtp.messages.map((m) => m.subject)).toEqual([subject('2026-11-22'), subject('2026-11-23')])
  })

  it('a day a failed or missed scheduled run left unreported is sent by the next one, before its own', async () => {
    // Monday 08:00 IST's tick reports Sunday; Tuesday's run failed (or never ran); Wednesday's sends Monday, then Tuesday.
    const { rt, smtp } = await setup('2026-11-25T02:30:00Z')
    const engine = createRecipeEngine(rt)
    stops.push(() => engine.stop())
    await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-23T02:30:00Z') } })
    // A manual run and a dry run in between change nothing of what the next scheduled run owes.
    await engine.run('daily-report')
    await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-25T02:30:00Z') }, dryRun: true })
    const run = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-25T02:30:00Z') } })
    expect(run.summary).toMatchObject({ date: '2026-11-24', mailed: true, caught_up: ['2026-11-23'] })
    expect(smtp.messages.map((m) => m.subject)).toEqual([subject('2026-11-22'), subject('2026-11-24'), subject('2026-11-23'), subject('2026-11-24')])
    // Nothing owed the next day but its own.
    const next = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-26T02:30:00Z') } })
    expect(next.summary).not.toHaveProperty('caught_up')
    expect(smtp.messages.map((m) => m.subject).at(-1)).toBe(subject('2026-11-25'))
  })

  it('a day the relay refuses for good does not hold back the days after it: they are sent, the run fails naming it, and it is not sent again', async () => {
    // A 554 for Monday's report (too large, say). It blocked every later report: each morning's run tried Monday
    // first, failed on it, and never reached the days after it — for the week Monday stayed in the catch-up window.
    const { rt, smtp } = await setup('2026-11-26T02:30:00Z', {}, (m) => (m.subject === subject('2026-11-23') ? '5.3.4 Message too big for system' : undefined))
    const engine = createRecipeEngine(rt)
    stops.push(() => engine.stop())
    await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-23T02:30:00Z') } })
    // Tuesday's and Wednesday's runs missed; Thursday's owes Monday and Tuesday, then Wednesday, its own.
    const run = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-26T02:30:00Z') } })
    expect(run.status).toBe('failed')
    expect(run.error).toMatch(/^the daily report for 2026-11-23 \(.*554.*\) was not delivered; the relay refused it for good, so the next runs do not send it again \(sent: 2026-11-24\)/)
    expect(smtp.messages.map((m) => m.subject)).toEqual([subject('2026-11-22'), subject('2026-11-24'), subject('2026-11-25')])
    // Friday's run sends its own day only.
    const next = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-27T02:30:00Z') } })
    expect(next.status).toBe('succeeded')
    expect(next.summary).not.toHaveProperty('caught_up')
    expect(smtp.messages.map((m) => m.subject).at(-1)).toBe(subject('2026-11-26'))
  })

  it('a day a run cut short had already handed over (mailed, not yet recorded) is not mailed again by the next run', async () => {
    const { rt, clock, smtp } = await setup('2026-11-23T02:30:00Z')
    const engine = createRecipeEngine(rt)
    stops.push(() => engine.stop())
    await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-23T02:30:00Z') } })
    // Tuesday's run mails Monday's report, then the process dies before the run records the day: the mail log
    // has it, the recipe's state does not (a run cut short by a failing database leaves the same).
    await clock.advanceTo(Date.parse('2026-11-24T02:30:00Z'))
    await createKvState(rt, recipeStateNamespace('daily-report')).set('sendingDay', '2026-11-23')
    await sendDailyReport(rt, { date: '2026-11-23', timezone: 'Asia/Kolkata' }, liveEffects())
    // Someone mails Tuesday's report to themselves: that does not count as the team's.
    await sendDailyReport(rt, { date: '2026-11-24', timezone: 'Asia/Kolkata', to: 'me@example.com' }, liveEffects())
    // The tick is run again after the restart: Monday is not mailed twice.
    const again = await engine.run('daily-report', { trigger: { type: 'catchup', scheduledAt: Date.parse('2026-11-24T02:30:00Z') } })
    expect(again.summary).toMatchObject({ date: '2026-11-23', mailed: true, already_handed_over: true })
    await clock.advanceTo(Date.parse('2026-11-25T02:30:00Z'))
    const run = await engine.run('daily-report', { trigger: { type: 'cron', scheduledAt: Date.parse('2026-11-25T02:30:00Z') } })
    expect(run.summary).toMatchObject({ date: '2026-11-24', mailed: true, status: 'sent' })
    expect(smtp.envelopes.filter((to) => to.includes('ops@example.com')).length).toBe(3)
    expect(smtp.messages.map((m) => m.subject)).toEqual([subject('2026-11-22'), subject('2026-11-23'), subject('2026-11-24'), subject('2026-11-24')])
  })

  it('without REPORT_TO the figures logged are those of the tick\'s day before too', async () => {
    const { rt } = await setup('2026-11-24T02:00:00Z', { REPORT_TO: '' })
    const engine = createRecipeEngine(rt)
    stops.push(() => engine.stop())
    const run = await engine.run('daily-report', { trigger: { type: 'catchup', scheduledAt: Date.parse('2026-11-23T02:30:00Z') } })
    expect(run.summary).toMatchObject({ date: '2026-11-22', mailed: false })
  })
})
