import { Counter, Gauge, type Registry } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

interface PurgeMetrics {
  rows: Counter<'table'>
  behind: Gauge<'purge'>
}

/**
 * Each retention purge and the tables it deletes from (the `tables` of its run: src/webhooks/retention.ts,
 * src/destinations/retention.ts, src/recipes/retention.ts, src/calls/history-retention.ts): fixed label values.
 */
const PURGE_TABLES: Readonly<Record<string, readonly string[]>> = {
  webhooks: ['webhook_events', 'webhook_rejections'],
  destinations: ['destination_deliveries', 'destination_attempts', 'destination_payloads'],
  recipes: ['recipe_event_fires', 'recipe_runs', 'recipe_ticks'],
  history: ['conversations', 'calls', 'mail_log'],
}

const purgeMetrics = defineMetrics((registers): PurgeMetrics => {
  const metrics: PurgeMetrics = {
    rows: new Counter({ name: 'switchboard_retention_purged_rows_total', help: 'Rows the retention purges deleted, by table', labelNames: ['table'], registers }),
    behind: new Gauge({
      name: 'switchboard_retention_purge_behind',
      help: '1 when the last run of a retention purge stopped at its time limit with rows past the window left (the next run goes on; staying 1 means expiring rows arrive faster than the purge deletes them)',
      labelNames: ['purge'],
      registers,
    }),
  }
  // Every series from the start, at 0 (not behind, nothing purged yet): an alert on `switchboard_retention_purge_behind
  // == 1` or on the rows purged found no series at all until the first run.
  for (const [purge, tables] of Object.entries(PURGE_TABLES)) {
    metrics.behind.set({ purge }, 0)
    for (const table of tables) metrics.rows.inc({ table }, 0)
  }
  return metrics
})

/** The purge metrics on `registry` before any purge has run: where the purges run (every role but `receiver`). */
export function registerPurgeMetrics(registry: Registry): void {
  purgeMetrics(registry)
}

/** Records a purge run: the rows it deleted from each table and whether it stopped with more to do. */
export function recordPurge(registry: Registry, purge: string, rows: Record<string, number>, more: boolean): void {
  const metrics = purgeMetrics(registry)
  for (const [table, n] of Object.entries(rows)) if (n > 0) metrics.rows.inc({ table }, n)
  metrics.behind.set({ purge }, more ? 1 : 0)
}
