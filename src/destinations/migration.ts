import type { Migration } from 'kysely'

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
