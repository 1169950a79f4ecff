import { sql, type Migration } from 'kysely'
import { hasColumn } from './has-column.ts'

/**
 * `0006_destinations`: the forwarding outbox, every attempt, and per-destination state. Portable like
 * the other migrations (BIGINT epoch-ms, TEXT JSON); each step `ifNotExists` because SQLite migrates
 * without a transaction.
 */
export const destinationsMigration: Migration = {
  async up(db) {
    await db.schema
      .createTable('destination_deliveries')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('conversation_id', 'text')
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('order_at', 'bigint', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('round_attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('claimed_by', 'text')
      .addColumn('claimed_until', 'bigint')
      .addColumn('last_status', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('delivered_at', 'bigint')
      .execute()
    await db.schema.createIndex('destination_deliveries_due').ifNotExists().on('destination_deliveries').columns(['destination', 'status', 'next_attempt_at']).execute()
    await db.schema
      .createIndex('destination_deliveries_conversation')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'conversation_id', 'status', 'order_at'])
      .execute()
    await db.schema.createIndex('destination_deliveries_event').ifNotExists().on('destination_deliveries').column('event_id').execute()
    await db.schema.createIndex('destination_deliveries_created').ifNotExists().on('destination_deliveries').columns(['destination', 'created_at']).execute()

    await db.schema
      .createTable('destination_attempts')
      .ifNotExists()
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('latency_ms', 'integer', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('result', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('response', 'text')
      .addPrimaryKeyConstraint('destination_attempts_pk', ['delivery_id', 'attempt'])
      .execute()

    await db.schema
      .createTable('destination_state')
      .ifNotExists()
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('disabled_at', 'bigint')
      .addColumn('disabled_reason', 'text')
      .execute()
  },
  async down(db) {
    for (const table of ['destination_state', 'destination_attempts', 'destination_deliveries']) await db.schema.dropTable(table).ifExists().execute()
  },
}

/**
 * `0009_destination_payloads`: an event's body once, in `destination_payloads`, however many destinations it
 * goes to — the first step of narrow delivery rows. The rows are rewritten on every claim and outcome, and a
 * kilobyte of body in each is most of the outbox's write cost; but the previous version reads the body from
 * the row while a deploy runs both, so the column goes over several releases (README → Rolling deploys): this
 * one adds the table, copies the bodies of existing rows into it and writes both; 0.2.0 stops filling the row's
 * copy (it still names the column, which has no default); a later release gives it a default and stops naming
 * it, and the one after drops it. The copy can run again after a crash half-way (SQLite migrates
 * without a transaction): bodies already copied are skipped.
 */
export const destinationPayloadsMigration: Migration = {
  async up(db) {
    await db.schema
      .createTable('destination_payloads')
      .ifNotExists()
      .addColumn('event_id', 'text', (c) => c.primaryKey())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute()
    await db.schema.createIndex('destination_payloads_created').ifNotExists().on('destination_payloads').column('created_at').execute()
    await db
      .insertInto('destination_payloads')
      .columns(['event_id', 'payload', 'created_at'])
      .expression(
        db
          .selectFrom('destination_deliveries')
          .select(['event_id', (eb) => eb.fn.min('payload').as('payload'), (eb) => eb.fn.min('created_at').as('created_at')])
          // SQLite needs a WHERE before an upsert's ON CONFLICT (else it reads ON as a join's).
          .where(sql<boolean>`1 = 1`)
          .groupBy('event_id'),
      )
      .onConflict((oc) => oc.column('event_id').doNothing())
      .execute()
  },
  async down(db) {
    await db.schema.dropTable('destination_payloads').ifExists().execute()
  },
}

/**
 * `0010_destination_pending_indexes`: the outbox's two hot indexes hold pending deliveries only. Every outcome
 * moved a delivered row within both (status is in each key): now it leaves them, one index write instead of two
 * each, and the claim scans an index no larger than the backlog however long deliveries are kept. The queries
 * that read pending rows say `status = 'pending'` as a literal, which is what lets SQLite choose a partial index.
 * The counts by status (`destinations list`) read the table instead; they run on demand, not per delivery.
 */
export const destinationPendingIndexesMigration: Migration = {
  async up(db) {
    await db.schema
      .createIndex('destination_deliveries_pending_due')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'next_attempt_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
    await db.schema
      .createIndex('destination_deliveries_pending_conversation')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'conversation_id', 'order_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
    await db.schema.dropIndex('destination_deliveries_due').ifExists().execute()
    await db.schema.dropIndex('destination_deliveries_conversation').ifExists().execute()
  },
  async down(db) {
    await db.schema.createIndex('destination_deliveries_due').ifNotExists().on('destination_deliveries').columns(['destination', 'status', 'next_attempt_at']).execute()
    await db.schema.createIndex('destination_deliveries_conversation').ifNotExists().on('destination_deliveries').columns(['destination', 'conversation_id', 'status', 'order_at']).execute()
    await db.schema.dropIndex('destination_deliveries_pending_conversation').ifExists().execute()
    await db.schema.dropIndex('destination_deliveries_pending_due').ifExists().execute()
  },
}

/**
 * `0013_destination_ordered_flag`: the ordering index holds only the pending deliveries of ordered destinations.
 * Until now every pending delivery was in it, keyed by its conversation (a random key), whether its destination
 * ordered or not — one scattered index write when a delivery was queued and another when it left, about a fifth of
 * the delivery worker's CPU in `npm run bench -- forwarding`, for an index only ordered destinations read. The new
 * `ordered` column says which deliveries take part; its default of 1 keeps the rows a previous release writes
 * during a rolling deploy in the order they had (README → Rolling deploys). The previous release's ordered claims
 * cannot use the new index (their query does not say `ordered = 1`): during the deploy they read their
 * destination's pending rows instead, correct but slower with a large backlog.
 */
export const destinationOrderedFlagMigration: Migration = {
  async up(db) {
    if (!(await hasColumn(db, 'destination_deliveries', 'ordered'))) {
      await db.schema.alterTable('destination_deliveries').addColumn('ordered', 'integer', (c) => c.notNull().defaultTo(1)).execute()
    }
    await db.schema
      .createIndex('destination_deliveries_pending_ordered')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'conversation_id', 'order_at'])
      .where(sql<boolean>`status = 'pending' and ordered = 1`)
      .execute()
    await db.schema.dropIndex('destination_deliveries_pending_conversation').ifExists().execute()
  },
  async down(db) {
    await db.schema
      .createIndex('destination_deliveries_pending_conversation')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'conversation_id', 'order_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
    await db.schema.dropIndex('destination_deliveries_pending_ordered').ifExists().execute()
    if (await hasColumn(db, 'destination_deliveries', 'ordered')) await db.schema.alterTable('destination_deliveries').dropColumn('ordered').execute()
  },
}

/**
 * `0014_destination_dead_index`: the dead letters of each destination, newest first, on an index of their own —
 * for the dashboard's Destinations page and `destinations deliveries --status dead`, which otherwise read a
 * destination's every delivery to find its few dead ones, and to count them. Partial: a delivery enters it only when
 * it dies (rare), so delivering costs nothing more.
 */
export const destinationDeadIndexMigration: Migration = {
  async up(db) {
    await db.schema
      .createIndex('destination_deliveries_dead')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'created_at'])
      .where(sql.ref('status'), '=', sql.lit('dead'))
      .execute()
  },
  async down(db) {
    await db.schema.dropIndex('destination_deliveries_dead').ifExists().execute()
  },
}

/**
 * `0015_destination_pending_covering`: the outbox's pending index also holds each delivery's `created_at`, so the
 * backlog's depth and its oldest delivery — read at every `/metrics` scrape (`switchboard_destination_queue_depth`,
 * `…_oldest_undelivered_seconds`), on the dashboard's Destinations page and by `destinations list` — come from the
 * index alone. They looked up every pending row in the table for its `created_at`: with 200,000 pending (a
 * destination down for half a day at a campaign's pace) 90–100 ms a read with the table in the page cache, against
 * 13 ms from the index; with the table on disk the row reads were several times slower, growing with the backlog,
 * in the processing thread, every scrape. The claim reads the index as before (same leading columns); a pending
 * delivery's entry is 8 bytes longer. The index replaces `destination_deliveries_pending_due`, created first so the
 * claim always has one; the previous release's queries use it as well (they name no index).
 */
export const destinationPendingCoveringMigration: Migration = {
  async up(db) {
    await db.schema
      .createIndex('destination_deliveries_pending_due_created')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'next_attempt_at', 'created_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
    await db.schema.dropIndex('destination_deliveries_pending_due').ifExists().execute()
  },
  async down(db) {
    await db.schema
      .createIndex('destination_deliveries_pending_due')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'next_attempt_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
    await db.schema.dropIndex('destination_deliveries_pending_due_created').ifExists().execute()
  },
}
