import { Counter, Gauge, type Registry } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

interface PurgeMetrics {
  rows: Counter<'table'>
  behind: Gauge<'purge'>
}

const purgeMetrics = defineMetrics((registers): PurgeMetrics => ({
  rows: new Counter({ name: 'switchboard_retention_purged_rows_total', help: 'Rows the retention purges deleted, by table', labelNames: ['table'], registers }),
  behind: new Gauge({
    name: 'switchboard_retention_purge_behind',
    help: '1 when the last run of a retention purge stopped at its time limit with rows past the window left (the next run goes on; staying 1 means expiring rows arrive faster than the purge deletes them)',
    labelNames: ['purge'],
    registers,
  }),
}))

/** Records a purge run: the rows it deleted from each table and whether it stopped with more to do. */
export function recordPurge(registry: Registry, purge: string, rows: Record<string, number>, more: boolean): void {
  const metrics = purgeMetrics(registry)
  for (const [table, n] of Object.entries(rows)) if (n > 0) metrics.rows.inc({ table }, n)
  metrics.behind.set({ purge }, more ? 1 : 0)
}
