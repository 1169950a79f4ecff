import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { useServeInProcess } from '../helpers/serve-in-process.ts'

const serve = useServeInProcess('metrics-at-start')

/** Every `switchboard_*` metric the README names (the `switchboard_process_*` / `switchboard_nodejs_*` families aside). */
function readmeMetrics(): string[] {
  const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8')
  return [...new Set([...readme.matchAll(/\bswitchboard_[a-z_]*[a-z]\b(?!_\*)/g)].map((m) => m[0]))].filter((name) => !/^switchboard_(process|nodejs)_/.test(name))
}

// An alert written from the README (`increase(switchboard_mail_failures_total[1h]) > 0`, `switchboard_retention_purge_behind == 1`)
// found nothing on a service that had not yet sent a mail or run a purge: the metric was not there until its first event.
it('/metrics lists every metric the README names as soon as serve is up, at zero for their fixed label values', async () => {
  const server = await serve.start()
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  const names = readmeMetrics()
  expect(names.length).toBeGreaterThan(30)
  const listed = new Set([...metrics.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]))
  expect(names.filter((name) => !listed.has(name))).toEqual([])

  const series = [
    'switchboard_mail_sent_total{transport="smtp"} 0',
    'switchboard_mail_sent_total{transport="outbox"} 0',
    'switchboard_mail_failures_total{transport="smtp"} 0',
    'switchboard_mail_failures_total{transport="outbox"} 0',
    'switchboard_proxy_coalesced_total 0',
    'switchboard_proxy_cache_results_total{result="HIT"} 0',
    'switchboard_proxy_cache_results_total{result="STALE"} 0',
    ...['webhooks', 'destinations', 'recipes', 'history'].map((purge) => `switchboard_retention_purge_behind{purge="${purge}"} 0`),
    ...['webhook_events', 'webhook_rejections', 'destination_deliveries', 'destination_attempts', 'destination_payloads', 'recipe_event_fires', 'recipe_runs', 'recipe_ticks', 'conversations', 'calls', 'mail_log'].map(
      (table) => `switchboard_retention_purged_rows_total{table="${table}"} 0`,
    ),
  ]
  const lines = new Set(metrics.split('\n'))
  expect(series.filter((line) => !lines.has(line))).toEqual([])
}, 60_000)

// prom-client drops a metric it marks `omit` when registries are summed, and /metrics sums the main thread's with the
// processing thread's: the start time, which uptime and restart alerts read, was missing once the thread reported.
it('/metrics keeps the process start time once the processing thread reports', async () => {
  const server = await serve.start()
  await expect.poll(async () => (await (await fetch(`${server.url}/readyz`)).json()) as { processing?: string }, { timeout: 30_000 }).toMatchObject({ processing: 'running' })
  const metrics = await (await fetch(`${server.url}/metrics`)).text()
  expect(metrics).toMatch(/^switchboard_recipe_runs_total|^# TYPE switchboard_recipe_runs_total/m)
  const started = /^switchboard_process_start_time_seconds (\d+)$/m.exec(metrics)
  // This process's start (the service runs in the test's worker, which lives across test files: past ten minutes
  // into a long suite, "within 600 s of now" failed).
  expect(Math.abs(Number(started?.[1]) - (Date.now() / 1000 - process.uptime()))).toBeLessThan(5)
}, 60_000)
