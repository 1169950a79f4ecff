import { afterEach, expect, it } from 'vitest'
import { purgeCallHistory } from '../../src/calls/history-retention.ts'
import { loadConfig } from '../../src/config/load.ts'
import { describeEachDialect } from '../helpers/db.ts'
import { createHarness, type Harness } from '../webhooks/helpers.ts'
import { outboxDir, writeOutboxMessage } from '../../src/reports/outbox.ts'
import { readdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'

const DAY = 86_400_000

/**
 * Call history — the read model's conversations, the calls switchboard placed, the mail log — grew by a row per call
 * for good: 100,000 calls a day is tens of millions of rows in a year. HISTORY_RETENTION_DAYS (off by default)
 * purges what is past it, and only what nothing waits on.
 */
describeEachDialect('call history retention', (dialect) => {
  let h: Harness | undefined
  afterEach(async () => {
    await h?.close()
    h = undefined
  })

  async function conversation(id: string, endedAt: number | null, updatedAt: number): Promise<void> {
    await h!.rt.store.db
      .insertInto('conversations')
      .values({
        conversation_id: id, agent_id: 101, contact_number: '+919876543210', status: endedAt === null ? 'in_progress' : 'completed', terminal: endedAt === null ? 0 : 1,
        duration_seconds: null, started_at: null, ended_at: endedAt, failure_reason: null, trace_id: `tr_${id}`, from_phone: null, results: null,
        call_parameters: '{}', last_event_at: updatedAt, source: 'webhook', created_at: updatedAt, updated_at: updatedAt,
      })
      .execute()
  }
  async function call(id: string, createdAt: number, status: string, scheduledFor: number | null = null): Promise<void> {
    await h!.rt.store.db
      .insertInto('calls')
      .values({
        id, tenant: 't', agent_id: 101, customer_phone: '+919876543210', idempotency_key: `key_${id}`, trace_id: null, conversation_id: null,
        previous_conversation_id: null, scheduled_for: scheduledFor, parameters: '[]', retry_context: null, metadata: null, recipe: null, campaign: null,
        status, error: null, created_at: createdAt, updated_at: createdAt,
      })
      .execute()
  }
  async function mail(id: string, createdAt: number, status: string): Promise<void> {
    await h!.rt.store.db
      .insertInto('mail_log')
      .values({ id, message_id: null, recipients: 'ops@example.com', subject: 'report', status, attempts: 1, error: null, created_at: createdAt, updated_at: createdAt, raw: null, next_attempt_at: null, claimed_by: null, claimed_until: null })
      .execute()
  }
  const left = async () => ({
    conversations: (await h!.rt.store.db.selectFrom('conversations').select('conversation_id as id').orderBy('conversation_id').execute()).map((r) => r.id),
    calls: (await h!.rt.store.db.selectFrom('calls').select('id').orderBy('id').execute()).map((r) => r.id),
    mail: (await h!.rt.store.db.selectFrom('mail_log').select('id').orderBy('id').execute()).map((r) => r.id),
  })

  async function seed(): Promise<void> {
    const now = h!.clock.now()
    await conversation('conv_ended_old', now - 41 * DAY, now - 41 * DAY)
    await conversation('conv_ended_recent', now - 39 * DAY, now - 39 * DAY)
    // Ended inside the window but its row last touched before it cannot happen; ended before, touched since (a late
    // result) still goes: the end decides.
    await conversation('conv_ended_old_touched', now - 45 * DAY, now - DAY)
    await conversation('conv_never_ended_old', null, now - 41 * DAY)
    await conversation('conv_in_progress', null, now - DAY)
    await call('call_old_initiated', now - 41 * DAY, 'initiated')
    await call('call_old_failed', now - 50 * DAY, 'failed')
    await call('call_old_pending', now - 41 * DAY, 'pending')
    // Still waiting in the paced queue (its call_queue row holds it): its ledger row is what the send settles.
    await call('call_old_queued', now - 41 * DAY, 'queued')
    await call('call_old_scheduled_ahead', now - 41 * DAY, 'scheduled', now + DAY)
    await call('call_old_scheduled_past', now - 41 * DAY, 'scheduled', now - 41 * DAY + 3_600_000)
    await call('call_recent', now - 39 * DAY, 'initiated')
    await mail('mail_old_sent', now - 41 * DAY, 'sent')
    await mail('mail_old_failed', now - 41 * DAY, 'failed')
    await mail('mail_old_queued', now - 41 * DAY, 'queued')
    await mail('mail_recent', now - DAY, 'sent')
  }

  it('keeps everything while HISTORY_RETENTION_DAYS is 0, the default', async () => {
    h = await createHarness(dialect)
    await seed()
    const before = await left()
    expect(await purgeCallHistory(h.rt)).toEqual({ conversations: 0, calls: 0, mail: 0, outboxFiles: 0, skipped: true })
    expect(await left()).toEqual(before)
  })

  it('purges what ended or was placed before the window, in chunks; keeps what is queued, scheduled ahead or inside it', async () => {
    h = await createHarness(dialect, { HISTORY_RETENTION_DAYS: '40' })
    await seed()
    expect(await purgeCallHistory(h.rt, { chunk: 1 })).toEqual({ conversations: 3, calls: 3, mail: 2, outboxFiles: 0, skipped: false })
    expect(await left()).toEqual({
      conversations: ['conv_ended_recent', 'conv_in_progress'],
      calls: ['call_old_pending', 'call_old_queued', 'call_old_scheduled_ahead', 'call_recent'],
      mail: ['mail_old_queued', 'mail_recent'],
    })
    expect(await purgeCallHistory(h.rt)).toEqual({ conversations: 0, calls: 0, mail: 0, outboxFiles: 0, skipped: false })
    // Two days on, the day that was inside the window is past it.
    await h.clock.advance(2 * DAY)
    expect(await purgeCallHistory(h.rt)).toMatchObject({ conversations: 1, calls: 1 })
    const metrics = await h.rt.metrics.metrics()
    expect(metrics).toContain('switchboard_retention_purged_rows_total{table="conversations"} 4')
    expect(metrics).toContain('switchboard_retention_purged_rows_total{table="mail_log"} 2')
    expect(metrics).toContain('switchboard_retention_purge_behind{purge="history"} 0')
  })

  it('removes the mail the outbox wrote as files before the window, by the time in their names; other files stay', async () => {
    h = await createHarness(dialect, { HISTORY_RETENTION_DAYS: '40' })
    const now = h.clock.now()
    const old = await writeOutboxMessage(h.rt.config.dataDir, 'mail_old', now - 41 * DAY, Buffer.from('Subject: old'))
    const recent = await writeOutboxMessage(h.rt.config.dataDir, 'mail_recent', now - 39 * DAY, Buffer.from('Subject: recent'))
    const dir = outboxDir(h.rt.config.dataDir)
    // A write a crash cut short, long ago; and a file of the user's own, whatever its age.
    writeFileSync(join(dir, `${basename(old).replace('mail_old', 'mail_cut')}.tmp`), 'half')
    writeFileSync(join(dir, 'notes.eml'), 'mine')
    expect(readdirSync(dir)).toHaveLength(4)
    expect((await purgeCallHistory(h.rt)).outboxFiles).toBe(2)
    expect(readdirSync(dir).sort()).toEqual([basename(recent), 'notes.eml'].sort())
    // Two days on, the one that was inside the window is past it.
    await h.clock.advance(2 * DAY)
    expect((await purgeCallHistory(h.rt)).outboxFiles).toBe(1)
    expect(readdirSync(dir)).toEqual(['notes.eml'])
  })

  // The outbox's files went first and a folder it could not list (another user's; here a file where the folder goes)
  // threw out of the purge before the database's rows were reached, round after round.
  it("an outbox folder it cannot list does not hold back the database's purge", async () => {
    h = await createHarness(dialect, { HISTORY_RETENTION_DAYS: '40' })
    await seed()
    writeFileSync(outboxDir(h.rt.config.dataDir), 'not a folder')
    expect(await purgeCallHistory(h.rt)).toEqual({ conversations: 3, calls: 3, mail: 2, outboxFiles: 0, skipped: false })
  })
})

it('HISTORY_RETENTION_DAYS is 0 or at least 40: a shorter window would empty the report\'s trend and the follow-up cap\'s history', () => {
  expect(loadConfig({ env: {} }).history.retentionDays).toBe(0)
  expect(loadConfig({ env: { HISTORY_RETENTION_DAYS: '365' } }).history.retentionDays).toBe(365)
  expect(() => loadConfig({ env: { HISTORY_RETENTION_DAYS: '39' } })).toThrow(/HISTORY_RETENTION_DAYS.*must be 0 \(keep call history for good\) or at least 40/)
  expect(loadConfig({ env: { HISTORY_RETENTION_DAYS: '40' } }).history.retentionDays).toBe(40)
  expect(() => loadConfig({ env: { HISTORY_RETENTION_DAYS: '-1' } })).toThrow(/HISTORY_RETENTION_DAYS/)
})
