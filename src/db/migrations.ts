import { destinationDeadIndexMigration, destinationOrderedFlagMigration, destinationPayloadsMigration, destinationPendingCoveringMigration, destinationPendingIndexesMigration, destinationsMigration, destinationTalliesMigration } from './destination-migrations.ts'
import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely'
import { hasColumn } from './has-column.ts'

/**
 * In-code migrations, portable to SQLite and Postgres: BIGINT for epoch-ms times, INTEGER 0/1 for
 * booleans, TEXT for JSON, no auto-increment. SQLite runs migrations without a transaction, so each step
 * is `ifNotExists` and safe to re-run after a crash half-way. Append new migrations; never edit one
 * that has shipped.
 */
// Kysely<any> is what kysely's Migration interface takes: migrations must not depend on today's schema type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>

const m0001: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('webhook_events')
      .ifNotExists()
      .addColumn('event_id', 'text', (c) => c.primaryKey())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('conversation_id', 'text')
      .addColumn('trace_id', 'text')
      .addColumn('agent_id', 'bigint')
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('headers', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('claimed_by', 'text')
      .addColumn('claimed_until', 'bigint')
      .addColumn('last_error', 'text')
      .addColumn('processed_at', 'bigint')
      .execute()
    await db.schema.createIndex('webhook_events_due').ifNotExists().on('webhook_events').columns(['status', 'next_attempt_at']).execute()
    await db.schema.createIndex('webhook_events_received').ifNotExists().on('webhook_events').column('received_at').execute()
    await db.schema.createIndex('webhook_events_conversation').ifNotExists().on('webhook_events').column('conversation_id').execute()

    await db.schema
      .createTable('conversations')
      .ifNotExists()
      .addColumn('conversation_id', 'text', (c) => c.primaryKey())
      .addColumn('agent_id', 'bigint', (c) => c.notNull())
      .addColumn('contact_number', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('terminal', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('duration_seconds', 'integer')
      .addColumn('started_at', 'bigint')
      .addColumn('ended_at', 'bigint')
      .addColumn('failure_reason', 'text')
      .addColumn('trace_id', 'text')
      .addColumn('from_phone', 'text')
      .addColumn('recording_url', 'text')
      .addColumn('transcript', 'text')
      .addColumn('results', 'text')
      .addColumn('call_parameters', 'text')
      .addColumn('retry', 'text')
      .addColumn('retry_context', 'text')
      .addColumn('last_event_at', 'bigint', (c) => c.notNull())
      .addColumn('last_event_id', 'text')
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('conversations_ended').ifNotExists().on('conversations').column('ended_at').execute()
    await db.schema.createIndex('conversations_agent_status').ifNotExists().on('conversations').columns(['agent_id', 'status']).execute()
    await db.schema.createIndex('conversations_contact').ifNotExists().on('conversations').column('contact_number').execute()
    await db.schema.createIndex('conversations_trace').ifNotExists().on('conversations').column('trace_id').execute()

    await db.schema
      .createTable('calls')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('tenant', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'bigint', (c) => c.notNull())
      .addColumn('customer_phone', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text', (c) => c.notNull())
      .addColumn('trace_id', 'text')
      .addColumn('conversation_id', 'text')
      .addColumn('previous_conversation_id', 'text')
      .addColumn('scheduled_for', 'bigint')
      .addColumn('parameters', 'text', (c) => c.notNull())
      .addColumn('retry_context', 'text')
      .addColumn('metadata', 'text')
      .addColumn('recipe', 'text')
      .addColumn('campaign', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('calls_idempotency').ifNotExists().unique().on('calls').columns(['tenant', 'agent_id', 'idempotency_key']).execute()
    await db.schema.createIndex('calls_created').ifNotExists().on('calls').column('created_at').execute()
    await db.schema.createIndex('calls_trace').ifNotExists().on('calls').column('trace_id').execute()
    await db.schema.createIndex('calls_phone').ifNotExists().on('calls').column('customer_phone').execute()

    await db.schema
      .createTable('cache_entries')
      .ifNotExists()
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('tenant', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('resource_id', 'text')
      .addColumn('agent_id', 'bigint')
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('headers', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('stored_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('last_access_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('cache_entries_resource').ifNotExists().on('cache_entries').columns(['kind', 'resource_id']).execute()
    await db.schema.createIndex('cache_entries_agent').ifNotExists().on('cache_entries').columns(['kind', 'agent_id']).execute()
    await db.schema.createIndex('cache_entries_lru').ifNotExists().on('cache_entries').column('last_access_at').execute()

    await db.schema
      .createTable('tenant_keys')
      .ifNotExists()
      .addColumn('tenant', 'text', (c) => c.primaryKey())
      .addColumn('accepted_at', 'bigint')
      .addColumn('rejected_at', 'bigint')
      .execute()

    await db.schema
      .createTable('recordings')
      .ifNotExists()
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('tenant', 'text', (c) => c.notNull())
      .addColumn('conversation_id', 'text', (c) => c.notNull())
      .addColumn('file', 'text', (c) => c.notNull())
      .addColumn('content_type', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('stored_at', 'bigint', (c) => c.notNull())
      .addColumn('last_access_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('recordings_lru').ifNotExists().on('recordings').column('last_access_at').execute()

    await db.schema
      .createTable('recipe_runs')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('recipe', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text')
      .addColumn('dry_run', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('ended_at', 'bigint')
      .addColumn('summary', 'text')
      .addColumn('plan', 'text')
      .addColumn('error', 'text')
      .execute()
    await db.schema.createIndex('recipe_runs_recipe').ifNotExists().on('recipe_runs').columns(['recipe', 'started_at']).execute()

    await db.schema
      .createTable('recipe_ticks')
      .ifNotExists()
      .addColumn('recipe', 'text', (c) => c.notNull())
      .addColumn('tick_at', 'bigint', (c) => c.notNull())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('claimed_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('recipe_ticks_pk', ['recipe', 'tick_at'])
      .execute()

    await db.schema
      .createTable('recipe_event_fires')
      .ifNotExists()
      .addColumn('recipe', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('fired_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('recipe_event_fires_pk', ['recipe', 'event_id'])
      .execute()

    await db.schema
      .createTable('kv_state')
      .ifNotExists()
      .addColumn('namespace', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('kv_state_pk', ['namespace', 'key'])
      .execute()

    await db.schema
      .createTable('dnc')
      .ifNotExists()
      .addColumn('phone', 'text', (c) => c.primaryKey())
      .addColumn('reason', 'text')
      .addColumn('source', 'text')
      .addColumn('added_at', 'bigint', (c) => c.notNull())
      .execute()

    await db.schema
      .createTable('mail_log')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('message_id', 'text')
      .addColumn('recipients', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute()

    await db.schema
      .createTable('leases')
      .ifNotExists()
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute()
  },
  async down(db: AnyDb) {
    for (const table of [
      'leases', 'mail_log', 'dnc', 'kv_state', 'recipe_event_fires', 'recipe_ticks', 'recipe_runs',
      'recordings', 'tenant_keys', 'cache_entries', 'calls', 'conversations', 'webhook_events',
    ]) {
      await db.schema.dropTable(table).ifExists().execute()
    }
  },
}

/** Webhook health for the daily report: duplicate deliveries per event, rejections per minute and reason. */
const m0002: Migration = {
  async up(db: AnyDb) {
    // SQLite has no ADD COLUMN IF NOT EXISTS and runs migrations without a transaction: check first.
    if (!(await hasColumn(db, 'webhook_events', 'duplicates'))) {
      await db.schema.alterTable('webhook_events').addColumn('duplicates', 'integer', (c) => c.notNull().defaultTo(0)).execute()
    }
    await db.schema
      .createTable('webhook_rejections')
      .ifNotExists()
      .addColumn('bucket_at', 'bigint', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('webhook_rejections_pk', ['bucket_at', 'target', 'reason'])
      .execute()
    await db.schema.createIndex('webhook_events_source').ifNotExists().on('webhook_events').columns(['source', 'received_at']).execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('webhook_events_source').ifExists().execute()
    await db.schema.dropTable('webhook_rejections').ifExists().execute()
    await db.schema.alterTable('webhook_events').dropColumn('duplicates').execute()
  },
}

/**
 * The event pipeline: recipe event fires become a per-recipe queue (claimed in batches, retried, dead after
 * the attempt budget), and calls switchboard places wait in a durable, paced queue.
 */
const m0003: Migration = {
  async up(db: AnyDb) {
    // Fires recorded before this migration ran were fired at once: they are done.
    const columns: Array<[string, 'text' | 'integer' | 'bigint', string | number | null]> = [
      ['status', 'text', 'done'],
      ['attempts', 'integer', 0],
      ['next_attempt_at', 'bigint', 0],
      ['claimed_by', 'text', null],
      ['claimed_until', 'bigint', null],
      ['run_id', 'text', null],
      ['last_error', 'text', null],
    ]
    for (const [name, type, fallback] of columns) {
      if (await hasColumn(db, 'recipe_event_fires', name)) continue
      await db.schema
        .alterTable('recipe_event_fires')
        .addColumn(name, type, (c) => (fallback === null ? c : c.notNull().defaultTo(fallback)))
        .execute()
    }
    await db.schema.createIndex('recipe_event_fires_due').ifNotExists().on('recipe_event_fires').columns(['recipe', 'status', 'next_attempt_at']).execute()

    await db.schema
      .createTable('call_queue')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('tenant', 'text', (c) => c.notNull())
      .addColumn('request', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('claimed_by', 'text')
      .addColumn('claimed_until', 'bigint')
      .addColumn('enqueued_at', 'bigint', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .execute()
    await db.schema.createIndex('call_queue_due').ifNotExists().on('call_queue').column('next_attempt_at').execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropTable('call_queue').ifExists().execute()
    await db.schema.dropIndex('recipe_event_fires_due').ifExists().execute()
    for (const name of ['status', 'attempts', 'next_attempt_at', 'claimed_by', 'claimed_until', 'run_id', 'last_error']) {
      await db.schema.alterTable('recipe_event_fires').dropColumn(name).execute()
    }
  },
}

/**
 * The mail outbox: a message that could not be delivered waits in mail_log with its bytes, and the
 * running service retries it on a backoff until the relay answers. Forward-compatible (README →
 * Operations): new columns are nullable, so a previous version still inserts and updates mail_log.
 */
const m0004: Migration = {
  async up(db: AnyDb) {
    for (const [column, type] of [
      ['raw', 'text'],
      ['next_attempt_at', 'bigint'],
      ['claimed_by', 'text'],
      ['claimed_until', 'bigint'],
    ] as const) {
      if (!(await hasColumn(db, 'mail_log', column))) await db.schema.alterTable('mail_log').addColumn(column, type).execute()
    }
    await db.schema.createIndex('mail_log_due').ifNotExists().on('mail_log').columns(['status', 'next_attempt_at']).execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('mail_log_due').ifExists().execute()
    for (const column of ['claimed_until', 'claimed_by', 'next_attempt_at', 'raw']) await db.schema.alterTable('mail_log').dropColumn(column).execute()
  },
}

/**
 * The dashboard's event searches over millions of rows: by status or type newest first, and by trace id
 * (the call id), each answered from an index instead of a scan.
 */
const m0005: Migration = {
  async up(db: AnyDb) {
    await db.schema.createIndex('webhook_events_status_received').ifNotExists().on('webhook_events').columns(['status', 'received_at']).execute()
    await db.schema.createIndex('webhook_events_type_received').ifNotExists().on('webhook_events').columns(['event_type', 'received_at']).execute()
    await db.schema.createIndex('webhook_events_trace').ifNotExists().on('webhook_events').column('trace_id').execute()
    // The overview's per-hour counts by type and status read the index alone. It replaces the plain
    // received_at index (its leading column serves the same range scans), so ingest keeps as many indexes.
    await db.schema.createIndex('webhook_events_received_type_status').ifNotExists().on('webhook_events').columns(['received_at', 'event_type', 'status']).execute()
    await db.schema.dropIndex('webhook_events_received').ifExists().execute()
  },
  async down(db: AnyDb) {
    await db.schema.createIndex('webhook_events_received').ifNotExists().on('webhook_events').column('received_at').execute()
    await db.schema.dropIndex('webhook_events_received_type_status').ifExists().execute()
    await db.schema.dropIndex('webhook_events_trace').ifExists().execute()
    await db.schema.dropIndex('webhook_events_type_received').ifExists().execute()
    await db.schema.dropIndex('webhook_events_status_received').ifExists().execute()
  },
}

/** The provider's headers a recording is served with (Content-Disposition, Cache-Control), kept with the file. */
const m0007: Migration = {
  async up(db: AnyDb) {
    if (!(await hasColumn(db, 'recordings', 'headers'))) {
      await db.schema.alterTable('recordings').addColumn('headers', 'text').execute()
    }
  },
  async down(db: AnyDb) {
    await db.schema.alterTable('recordings').dropColumn('headers').execute()
  },
}

/**
 * The follow-up sweep reads only what it may act on: terminal conversations of a follow-up status, recent
 * (status, updated_at), that no live call in the ledger follows up yet (previous_conversation_id).
 */
const m0008: Migration = {
  async up(db: AnyDb) {
    await db.schema.createIndex('conversations_status_updated').ifNotExists().on('conversations').columns(['status', 'updated_at']).execute()
    await db.schema.createIndex('calls_previous_conversation').ifNotExists().on('calls').column('previous_conversation_id').execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('calls_previous_conversation').ifExists().execute()
    await db.schema.dropIndex('conversations_status_updated').ifExists().execute()
  },
}

/** The running instances of `serve`, so a killed one's claims are given back at once (src/instances.ts). */
const m0011: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('instances')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('process', 'text', (c) => c.notNull())
      .addColumn('host', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropTable('instances').ifExists().execute()
  },
}

/** The hourly purge of recipe fires finds the old ones by an index, not by reading the whole queue (src/recipes/retention.ts). */
const m0012: Migration = {
  async up(db: AnyDb) {
    await db.schema.createIndex('recipe_event_fires_fired').ifNotExists().on('recipe_event_fires').column('fired_at').execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('recipe_event_fires_fired').ifExists().execute()
  },
}

/**
 * The calling window a queued call must go out in (its recipient's zone and hours, as `scheduleCalls` decided
 * them), so a call held back by the provider's limits past the window's close is moved to the next opening
 * when it is finally sent. Forward-compatible: a nullable column; a previous version inserts rows without it,
 * and such rows are sent as before.
 */
const m0016: Migration = {
  async up(db: AnyDb) {
    if (!(await hasColumn(db, 'call_queue', 'calling_window'))) await db.schema.alterTable('call_queue').addColumn('calling_window', 'text').execute()
  },
  async down(db: AnyDb) {
    if (await hasColumn(db, 'call_queue', 'calling_window')) await db.schema.alterTable('call_queue').dropColumn('calling_window').execute()
  },
}

/**
 * Which process runs a recipe run (`<boot>/<pid namespace>/<pid>/<start time>`, src/utils/process-identity.ts):
 * a run left `running` by a killed process is known for what it is on its machine, instead of blocking the
 * recipe's ticks, event batches and manual runs for an hour. Forward-compatible: a nullable column; a previous
 * version's rows have none and are judged by age, as before.
 */
const m0017: Migration = {
  async up(db: AnyDb) {
    if (!(await hasColumn(db, 'recipe_runs', 'process'))) await db.schema.alterTable('recipe_runs').addColumn('process', 'text').execute()
  },
  async down(db: AnyDb) {
    if (await hasColumn(db, 'recipe_runs', 'process')) await db.schema.alterTable('recipe_runs').dropColumn('process').execute()
  },
}

/**
 * At most one real run of a recipe is `running` (a partial unique index): two processes that both found no run in
 * progress — a `recipes run` from cron at the minute of the service's tick — could both start one, and a batch
 * recipe launched its files twice. Runs left `running` beside a newer one (crashed processes, that race) are closed
 * first, or the index could not be built. Dry runs never take the slot. Portable: SQLite and Postgres both have
 * partial indexes.
 */
const m0018: Migration = {
  async up(db: AnyDb) {
    await sql`
      update recipe_runs set status = 'failed', ended_at = started_at,
        error = 'closed by migration 0018: a newer run of the recipe was also marked running'
      where status = 'running' and dry_run = 0 and exists (
        select 1 from recipe_runs newer
        where newer.recipe = recipe_runs.recipe and newer.status = 'running' and newer.dry_run = 0
          and (newer.started_at > recipe_runs.started_at or (newer.started_at = recipe_runs.started_at and newer.id > recipe_runs.id)))`.execute(db)
    await sql`create unique index if not exists recipe_runs_one_running on recipe_runs (recipe) where status = 'running' and dry_run = 0`.execute(db)
  },
  async down(db: AnyDb) {
    await sql`drop index if exists recipe_runs_one_running`.execute(db)
  },
}

/**
 * Dashboard sessions ended by "Log out" (src/ui/session-revocation.ts): a session cookie is stateless, so a copy
 * of one taken before the logout stayed valid until it expired (12 h). A row per ended session until its expiry.
 */
const m0019: Migration = {
  async up(db: AnyDb) {
    await db.schema
      .createTable('revoked_sessions')
      .ifNotExists()
      .addColumn('nonce', 'text', (c) => c.primaryKey())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropTable('revoked_sessions').ifExists().execute()
  },
}

/**
 * 0.13.0: calls by the conversation they became. A follow-up chain (`/ui/calls?chain=`, `followUpChain`) is walked back
 * one call at a time by the conversation each continues: without an index every step read the whole ledger (77 ms a
 * page at 300,000 calls on Postgres, up to 20 steps a chain, growing with history).
 */
const m0020: Migration = {
  async up(db: AnyDb) {
    await db.schema.createIndex('calls_conversation').ifNotExists().on('calls').column('conversation_id').execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('calls_conversation').ifExists().execute()
  },
}

/**
 * 0.16.0: the conversation and trace indexes of `webhook_events` leave out pending events (src/webhooks/keyed-lookup.ts).
 * The provider's ids are random: each new entry of these indexes landed on a page of its own, written whole into the
 * log by the receiver's durable commit — with provider-shaped ids the insert cost ~50 µs of CPU a row, ~30 without
 * them. Processing's outcome UPDATE adds the entries instead, off the webhook's path; lookups search the pending events
 * in the status index, which now carries both ids. Each index built reads the table once (seconds at millions of events).
 */
const m0021: Migration = {
  async up(db: AnyDb) {
    for (const column of ['conversation_id', 'trace_id'] as const) {
      const name = column === 'conversation_id' ? 'webhook_events_conversation' : 'webhook_events_trace'
      await db.schema.dropIndex(name).ifExists().execute()
      await db.schema.createIndex(`${name}_handled`).ifNotExists().on('webhook_events').column(column).where(sql.ref('status'), '<>', sql.lit('pending')).execute()
    }
    // The pending events' side of those lookups: the status index also carries both ids, so the backlog is searched in
    // the index (its entries appended in arrival order, as before) instead of row by row. Built before the old one
    // goes, so no query is left without an index by status meanwhile.
    await db.schema.createIndex('webhook_events_status_received_keys').ifNotExists().on('webhook_events').columns(['status', 'received_at', 'conversation_id', 'trace_id']).execute()
    await db.schema.dropIndex('webhook_events_status_received').ifExists().execute()
  },
  async down(db: AnyDb) {
    await db.schema.createIndex('webhook_events_status_received').ifNotExists().on('webhook_events').columns(['status', 'received_at']).execute()
    await db.schema.dropIndex('webhook_events_status_received_keys').ifExists().execute()
    for (const column of ['conversation_id', 'trace_id'] as const) {
      const name = column === 'conversation_id' ? 'webhook_events_conversation' : 'webhook_events_trace'
      await db.schema.dropIndex(`${name}_handled`).ifExists().execute()
      await db.schema.createIndex(name).ifNotExists().on('webhook_events').column(column).execute()
    }
  },
}

/**
 * 0.18.0: two lookups of recipe runs that read every run kept (a run per event batch adds up over a month: 0.4–0.5 s
 * at 200,000 runs, 1.8 s from a cold page cache). The runs still marked running, by start (a handful at any time): each
 * start of the recipe engine closes the ones a crashed process left running (src/recipes/engine.ts). An event's runs
 * (the dashboard's event page): one entry per run that names an event, none for the others.
 */
const m0023: Migration = {
  async up(db: AnyDb) {
    await sql`create index if not exists recipe_runs_running on recipe_runs (started_at) where status = 'running'`.execute(db)
    await sql`create index if not exists recipe_runs_event on recipe_runs (event_id) where event_id is not null`.execute(db)
  },
  async down(db: AnyDb) {
    await sql`drop index if exists recipe_runs_event`.execute(db)
    await sql`drop index if exists recipe_runs_running`.execute(db)
  },
}

/**
 * 0.19.0: the do-not-call list newest first (the dashboard's Mail page shows its latest 100) read off an index in that
 * order, instead of every number on the list sorted per page view: 7–8 ms at 100,000 numbers, ten times that at
 * 1,000,000 — a national list's size — against under a millisecond. The index's mixed order (newest first, then by
 * number) is the query's own: one in a single direction is read backwards for DESC, DESC only.
 */
const m0024: Migration = {
  async up(db: AnyDb) {
    await sql`create index if not exists dnc_added on dnc (added_at desc, phone)`.execute(db)
  },
  async down(db: AnyDb) {
    await sql`drop index if exists dnc_added`.execute(db)
  },
}

/**
 * 0.27.0: a contact's number as one value (src/campaigns/contact-key.ts) on conversations and the calls ledger, indexed,
 * for the follow-up planner's reading of a contact's history: by its spellings it missed calls written another way, and
 * the attempt cap let more calls through. Forward-compatible: nullable columns, which a previous version leaves empty
 * on the rows it writes; existing rows are filled after start-up, in paced chunks (src/campaigns/contact-key-fill.ts),
 * since the value depends on DEFAULT_COUNTRY, which a migration does not know. Until then their number as written is
 * looked up as before.
 */
const m0025: Migration = {
  async up(db: AnyDb) {
    if (!(await hasColumn(db, 'conversations', 'contact_key'))) await db.schema.alterTable('conversations').addColumn('contact_key', 'text').execute()
    if (!(await hasColumn(db, 'calls', 'customer_key'))) await db.schema.alterTable('calls').addColumn('customer_key', 'text').execute()
    await db.schema.createIndex('conversations_contact_key').ifNotExists().on('conversations').column('contact_key').execute()
    await db.schema.createIndex('calls_customer_key').ifNotExists().on('calls').column('customer_key').execute()
  },
  async down(db: AnyDb) {
    await db.schema.dropIndex('calls_customer_key').ifExists().execute()
    await db.schema.dropIndex('conversations_contact_key').ifExists().execute()
    if (await hasColumn(db, 'calls', 'customer_key')) await db.schema.alterTable('calls').dropColumn('customer_key').execute()
    if (await hasColumn(db, 'conversations', 'contact_key')) await db.schema.alterTable('conversations').dropColumn('contact_key').execute()
  },
}

/** The migration every database starts with: applied together with the rest, the database is new. */
export const FIRST_MIGRATION = '0001_initial'

export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_webhooks_stats': m0002,
  '0003_event_pipeline': m0003,
  '0004_mail_outbox': m0004,
  '0005_dashboard_indexes': m0005,
  '0006_destinations': destinationsMigration,
  '0007_recording_headers': m0007,
  '0008_follow_up_sweep_indexes': m0008,
  '0009_destination_payloads': destinationPayloadsMigration,
  '0010_destination_pending_indexes': destinationPendingIndexesMigration,
  '0011_instances': m0011,
  '0012_recipe_fires_fired_index': m0012,
  '0013_destination_ordered_flag': destinationOrderedFlagMigration,
  '0014_destination_dead_index': destinationDeadIndexMigration,
  '0015_destination_pending_covering': destinationPendingCoveringMigration,
  '0016_call_queue_window': m0016,
  '0017_recipe_runs_process': m0017,
  '0018_recipe_runs_one_running': m0018,
  '0019_revoked_sessions': m0019,
  '0020_calls_conversation': m0020,
  '0021_event_lookups_past_pending': m0021,
  '0022_destination_tallies': destinationTalliesMigration,
  '0023_recipe_runs_indexes': m0023,
  '0024_dnc_added_index': m0024,
  '0025_contact_keys': m0025,
}

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
}
