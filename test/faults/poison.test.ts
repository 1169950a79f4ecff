import { afterEach, expect, it } from 'vitest'
import { drainDue } from '../../src/webhooks/index.ts'
import { EventRefusedError, pendingRow } from '../../src/webhooks/inbox.ts'
import { webhookState } from '../../src/webhooks/state.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, makeEvent, type Harness } from '../webhooks/helpers.ts'
import { printFigures } from './helpers/figures.ts'

/**
 * Promise: a body the database cannot store is refused 400 with its reason, the same on SQLite and
 * Postgres, and never takes the valid events that share its group commit down with it.
 */
const VALID = 100
const POISON_EACH = 20

function poisonBodies(run: string): Array<{ body: Record<string, unknown>; reason: RegExp }> {
  const kinds: Array<(i: number) => { body: Record<string, unknown>; reason: RegExp }> = [
    (i) => ({ body: makeEvent({ event_id: `evt_${run}_nul\u0000${i}` }), reason: /U\+0000/ }),
    (i) => ({ body: { ...makeEvent({ event_id: `evt_${run}_type${i}` }), event_type: 'call.completed\u0000' }, reason: /U\+0000/ }),
    (i) => ({ body: makeEvent({ event_id: `evt_${run}_conv${i}`, call: { conversation_id: `conv\u0000${i}` } }), reason: /U\+0000/ }),
    (i) => ({ body: makeEvent({ event_id: `evt_${run}_field${i}`, call: { failure_reason: 'no\u0000answer' } }), reason: /U\+0000/ }),
    (i) => ({ body: makeEvent({ event_id: `evt_${run}_long${i}_${'x'.repeat(10_000)}` }), reason: /event id is longer than 255/ }),
    (i) => ({ body: makeEvent({ event_id: `evt_${run}_longconv${i}`, call: { conversation_id: 'c'.repeat(10_000) } }), reason: /conversation_id is longer than 255/ }),
  ]
  return Array.from({ length: POISON_EACH }, (_, i) => kinds[i % kinds.length]!(i))
}

describeEachDialect('fault: poison input never hurts its neighbours', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  it(`${POISON_EACH} poison bodies shuffled among ${VALID} valid ones, all at once: 400 with the reason for each poison, 204 for every valid one`, async () => {
    h = await createHarness(dialect)
    const run = `${dialect}${Date.now()}`
    const valid = Array.from({ length: VALID }, (_, i) => ({ body: makeEvent({ event_id: `evt_${run}_ok${i}` }) as Record<string, unknown>, reason: undefined as RegExp | undefined }))
    const all = [...valid, ...poisonBodies(run)]
    // A fixed shuffle: poison spread through the burst, so every group commit has both kinds.
    for (let i = all.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1)
      ;[all[i], all[j]] = [all[j]!, all[i]!]
    }
    const answers = await Promise.all(
      all.map(async (item) => {
        const res = await h!.send(item.body, { headers: { 'x-formantai-event-id': '' } })
        const text = await res.text()
        return { item, status: res.status, text }
      }),
    )
    const validAnswers = answers.filter((a) => !a.item.reason)
    const poisonAnswers = answers.filter((a) => a.item.reason)
    expect(validAnswers.map((a) => a.status)).toEqual(Array(VALID).fill(204))
    for (const a of poisonAnswers) {
      expect(a.status, a.text.slice(0, 200)).toBe(400)
      expect(a.text).toMatch(a.item.reason!)
    }
    const processed = (await drainDue(h.rt)).filter((o) => o.status === 'processed').length
    const rows = await h.rt.store.db.selectFrom('webhook_events').select(['event_id', 'duplicates']).execute()
    const stored = new Set(rows.map((r) => r.event_id))
    printFigures(`poison [${dialect}]`, {
      sent: all.length,
      acknowledged: validAnswers.filter((a) => a.status === 204).length,
      stored: rows.length,
      processed,
      duplicates: rows.reduce((n, r) => n + Number(r.duplicates), 0),
      lost: valid.filter((v) => !stored.has(String(v.body.event_id))).length,
      recoverySeconds: null,
      extra: { 'poison refused 400': poisonAnswers.filter((a) => a.status === 400).length },
    })
    expect(rows.length).toBe(VALID)
    expect(processed).toBe(VALID)
  })

  it('a group commit the database refuses for one row commits the others alone (no receiver check involved)', async () => {
    h = await createHarness(dialect)
    const { inbox } = webhookState(h.rt)
    const now = h.clock.now()
    const row = (id: string) =>
      pendingRow({ event_id: id, target: 'formant', event_type: 'call.completed', conversation_id: null, trace_id: null, agent_id: null, body: '{}', headers: '{}', source: 'webhook' }, now)
    // A NOT NULL violation: refused by both databases, for this row only.
    const bad = { ...row('evt_group_bad'), target: null as unknown as string }
    const commits = [row('evt_group_1'), bad, row('evt_group_2'), row('evt_group_1'), row('evt_group_3')].map((r) =>
      inbox.commit(r).then((v) => ({ ok: true as const, v }), (e: unknown) => ({ ok: false as const, e })),
    )
    const results = await Promise.all(commits)
    expect(results.map((r) => r.ok)).toEqual([true, false, true, true, true])
    expect(results[1]!.ok ? undefined : results[1]!.e).toBeInstanceOf(EventRefusedError)
    expect(results.map((r) => (r.ok ? r.v.duplicate : 'refused'))).toEqual([false, 'refused', false, true, false])
    const ids = (await h.rt.store.db.selectFrom('webhook_events').select('event_id').orderBy('event_id').execute()).map((r) => r.event_id)
    expect(ids).toEqual(['evt_group_1', 'evt_group_2', 'evt_group_3'])
  })
})
