import { PostgresAdapter, sql, type Migration } from 'kysely'
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

/**
 * `0022_destination_tallies` (Postgres only; nothing on SQLite): each destination's deliveries counted by status, kept
 * by the outbox's own triggers, and an index of the pending deliveries by age.
 *
 * The Destinations page, `destinations list`, the overview and every `/metrics` scrape counted the outbox: every
 * delivery kept, for each destination. SQLite reads the count off an index; Postgres must also see that each entry's
 * row is visible to it, which it can only skip on pages autovacuum has marked all-visible — and the outbox's newest
 * pages, the pending ones above all, are rewritten until they are delivered. With 1,000,000 deliveries kept and a
 * fifth of them changed since autovacuum last ran (its default threshold), the page took 250 ms (`npm run bench --
 * dashboard` with DATABASE_URL=postgres://…).
 *
 * A trigger per statement (insert, update, delete) adds a row of changes per destination and status the statement
 * moved, read from its transition tables: any writer — this version, an older replica during a rolling deploy, an
 * operator's SQL — keeps the counts, in its own transaction. Readers add the changes to the tallies; a fold every
 * minute (src/destinations/tallies.ts) moves them into the tallies. Rows of changes rather than the tallies updated in
 * place: concurrent transactions never wait on, or deadlock over, one destination's counter.
 *
 * The oldest pending delivery was the least of the pending index's `created_at` — again every pending entry read;
 * on `(destination, created_at)` it is the first entry of the destination's range.
 *
 * The outbox is locked against writes while the triggers are created and the tallies filled from one snapshot, so no
 * write falls between the two.
 */
export const destinationTalliesMigration: Migration = {
  async up(db) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
    await sql`LOCK TABLE destination_deliveries IN SHARE ROW EXCLUSIVE MODE`.execute(db)
    await sql`CREATE TABLE IF NOT EXISTS destination_tallies (destination text NOT NULL, status text NOT NULL, n bigint NOT NULL, PRIMARY KEY (destination, status))`.execute(db)
    await sql`CREATE TABLE IF NOT EXISTS destination_tally_changes (destination text NOT NULL, status text NOT NULL, n bigint NOT NULL)`.execute(db)
    // Table names resolve through the writer's search_path, as every query of the service does (one schema per
    // deployment, README → Running on Postgres).
    await sql
      .raw(
        `CREATE OR REPLACE FUNCTION switchboard_destination_tally() RETURNS trigger LANGUAGE plpgsql AS $tally$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO destination_tally_changes (destination, status, n) SELECT destination, status, count(*) FROM new_rows GROUP BY destination, status;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO destination_tally_changes (destination, status, n) SELECT destination, status, -count(*) FROM old_rows GROUP BY destination, status;
  ELSE
    INSERT INTO destination_tally_changes (destination, status, n)
    SELECT destination, status, sum(n) FROM (
      SELECT destination, status, 1 AS n FROM new_rows UNION ALL SELECT destination, status, -1 FROM old_rows
    ) moved GROUP BY destination, status HAVING sum(n) <> 0;
  END IF;
  RETURN NULL;
END
$tally$`,
      )
      .execute(db)
    await sql
      .raw(
        `CREATE OR REPLACE FUNCTION switchboard_destination_tally_reset() RETURNS trigger LANGUAGE plpgsql AS $tally$
BEGIN
  DELETE FROM destination_tally_changes;
  DELETE FROM destination_tallies;
  RETURN NULL;
END
$tally$`,
      )
      .execute(db)
    await sql`CREATE TRIGGER destination_tally_insert AFTER INSERT ON destination_deliveries REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION switchboard_destination_tally()`.execute(db)
    await sql`CREATE TRIGGER destination_tally_update AFTER UPDATE ON destination_deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION switchboard_destination_tally()`.execute(db)
    await sql`CREATE TRIGGER destination_tally_delete AFTER DELETE ON destination_deliveries REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION switchboard_destination_tally()`.execute(db)
    await sql`CREATE TRIGGER destination_tally_truncate AFTER TRUNCATE ON destination_deliveries FOR EACH STATEMENT EXECUTE FUNCTION switchboard_destination_tally_reset()`.execute(db)
    await sql`INSERT INTO destination_tallies (destination, status, n) SELECT destination, status, count(*) FROM destination_deliveries GROUP BY destination, status`.execute(db)
    await db.schema
      .createIndex('destination_deliveries_pending_created')
      .ifNotExists()
      .on('destination_deliveries')
      .columns(['destination', 'created_at'])
      .where(sql.ref('status'), '=', sql.lit('pending'))
      .execute()
  },
  async down(db) {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return
    await db.schema.dropIndex('destination_deliveries_pending_created').ifExists().execute()
    for (const name of ['destination_tally_insert', 'destination_tally_update', 'destination_tally_delete', 'destination_tally_truncate']) {
      await sql.raw(`DROP TRIGGER IF EXISTS ${name} ON destination_deliveries`).execute(db)
    }
    await sql`DROP FUNCTION IF EXISTS switchboard_destination_tally()`.execute(db)
    await sql`DROP FUNCTION IF EXISTS switchboard_destination_tally_reset()`.execute(db)
    await sql`DROP TABLE IF EXISTS destination_tally_changes`.execute(db)
    await sql`DROP TABLE IF EXISTS destination_tallies`.execute(db)
  },
}
