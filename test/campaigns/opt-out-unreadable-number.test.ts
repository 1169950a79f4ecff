import { afterEach, expect, it } from 'vitest'
import { H3 } from 'h3'
import { isBlocked, listDnc } from '../../src/campaigns/dnc.ts'
import { registerConsumers } from '../../src/pipeline.ts'
import { createManualClock } from '../../src/utils/clock.ts'
import { drainDue, registerWebhookRoutes, signFormant } from '../../src/webhooks/index.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { captureLogs } from '../helpers/log-capture.ts'
import { createTestRuntime, type TestRuntime } from '../helpers/runtime.ts'
import { SECRET, START, makeEvent } from '../webhooks/helpers.ts'

// A customer who said "don't call me again" on a call whose to_phone did not normalise was dropped without a trace:
// the event was processed, nothing was listed, nothing was logged.

describeEachDialect('an opt-out whose number does not normalise', (dialect) => {
  let rt: TestRuntime | undefined
  afterEach(async () => {
    await rt?.close()
    rt = undefined
  })

  async function setup() {
    const clock = createManualClock(START)
    const logs = captureLogs('warn')
    rt = await createTestRuntime({ dialect, clock, log: logs.log, env: { RECONCILE_INTERVAL_SECONDS: '0', DEFAULT_COUNTRY: 'IN' } })
    registerConsumers(rt)
    const app = new H3()
    registerWebhookRoutes(app, rt)
    const runtime = rt
    /** Receives one signed call.completed with these results and this to_phone, then processes it. */
    const deliver = async (toPhone: string, results: Record<string, unknown>) => {
      const event = makeEvent({ call: { to_phone: toPhone }, data: { results } })
      const body = JSON.stringify(event)
      const res = await app.fetch(
        new Request('http://localhost/webhooks/formant', {
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'x-formantai-signature': signFormant(body, SECRET),
            'x-formantai-timestamp': String(Math.floor(clock.now() / 1000)),
            'x-formantai-event-id': event.event_id,
          },
        }),
      )
      expect(res.status).toBe(204)
      expect((await drainDue(runtime)).map((o) => o.status)).toEqual(['processed'])
      return event
    }
    return { rt, logs, deliver }
  }

  const counted = async (runtime: TestRuntime) => {
    const metric = (await runtime.metrics.getMetricsAsJSON()).find((m) => m.name === 'switchboard_dnc_unreadable_opt_outs_total')
    return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels.outcome), v.value]))
  }

  it.each([
    ['+447911000009 ext 5', { opt_out: 'yes' }, '+447911000009'],
    ['=+447911000010', { dnc: true }, '+447911000010'],
  ])('%j: the number within it is listed, and the log and the metric say so', async (toPhone, results, listed) => {
    const { rt, logs, deliver } = await setup()
    expect(await counted(rt)).toEqual({ listed: 0, not_listed: 0 })
    const event = await deliver(toPhone, results)
    expect(await isBlocked(rt, listed)).toBe(true)
    expect((await listDnc(rt)).map((e) => ({ phone: e.phone, source: e.source }))).toEqual([{ phone: listed, source: `conversation:${event.data.call.conversation_id}` }])
    const warned = logs.find(/asked not to be called/)
    expect(warned).toHaveLength(1)
    expect(warned[0]).toMatchObject({ level: 40, event_id: event.event_id, conversation_id: event.data.call.conversation_id, to_phone: toPhone, phone: listed })
    expect(await counted(rt)).toEqual({ listed: 1, not_listed: 0 })
  })

  it('"<script>x</script>" (no number in it): nothing can be listed, so it is logged at warn and counted', async () => {
    const { rt, logs, deliver } = await setup()
    const event = await deliver('<script>x</script>', { unsubscribe: true })
    expect(await listDnc(rt)).toEqual([])
    const warned = logs.find(/asked not to be called/)
    expect(warned).toHaveLength(1)
    expect(warned[0]).toMatchObject({ level: 40, event_id: event.event_id, conversation_id: event.data.call.conversation_id, to_phone: '<script>x</script>' })
    expect(String(warned[0]!.msg)).toMatch(/nothing was added to the do-not-call list/)
    expect(await counted(rt)).toEqual({ listed: 0, not_listed: 1 })
  })

  it('the number is quoted in the log safely: control characters escaped, a long one cut', async () => {
    const { logs, deliver } = await setup()
    await deliver(`\u001b[2J${'9'.repeat(500)}`, { opt_out: true })
    const shown = String(logs.find(/asked not to be called/)[0]!.to_phone)
    expect(shown.startsWith('\\x1b[2J999')).toBe(true)
    expect(shown).not.toContain('\u001b')
    expect(shown.length).toBeLessThan(80)
  })

  it('an opt-out with a plain number is listed without a warning; results that do not ask are left alone', async () => {
    const { rt, logs, deliver } = await setup()
    await deliver('<script>y</script>', { intent: 'pay_later' })
    await deliver('+919876543219', { opt_out: 'yes' })
    expect(await isBlocked(rt, '+919876543219')).toBe(true)
    expect(logs.find(/asked not to be called/)).toEqual([])
    expect(await counted(rt)).toEqual({ listed: 0, not_listed: 0 })
  })
})
