import { Counter, type Registry } from 'prom-client'

export interface MailMetrics {
  sent: Counter<'transport'>
  failures: Counter<'transport'>
}

const cache = new WeakMap<Registry, MailMetrics>()

/** The mail counters on a runtime's registry, created once per registry. */
export function mailMetrics(registry: Registry): MailMetrics {
  let m = cache.get(registry)
  if (m) return m
  const existing = (name: string) => registry.getSingleMetric(name) as Counter<'transport'> | undefined
  m = {
    sent:
      existing('switchboard_mail_sent_total') ??
      new Counter({ name: 'switchboard_mail_sent_total', help: 'Mail messages delivered over SMTP or written to the outbox.', labelNames: ['transport'], registers: [registry] }),
    failures:
      existing('switchboard_mail_failures_total') ??
      new Counter({ name: 'switchboard_mail_failures_total', help: 'Mail messages given up on after their retries.', labelNames: ['transport'], registers: [registry] }),
  }
  cache.set(registry, m)
  return m
}
