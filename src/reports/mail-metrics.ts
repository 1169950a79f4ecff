import { Counter } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

/** The `transport` label's values: the SMTP relay, or the `.eml` outbox folder without SMTP_URL. */
const MAIL_TRANSPORTS = ['smtp', 'outbox'] as const

export interface MailMetrics {
  sent: Counter<'transport'>
  failures: Counter<'transport'>
}

/**
 * The mail counters on a runtime's registry. Counters already on it are taken as they are: a recipe's own copy of
 * this module (a recipe that imports the report code itself) counts into the same series.
 */
export const mailMetrics = defineMetrics((registers): MailMetrics => {
  const counter = (name: string, help: string) => {
    const metric = (registers[0]?.getSingleMetric(name) as Counter<'transport'> | undefined) ?? new Counter({ name, help, labelNames: ['transport'], registers })
    // Each transport's series from the start, at 0: an alert on `increase(…[1h])` finds it before the first mail.
    for (const transport of MAIL_TRANSPORTS) metric.inc({ transport }, 0)
    return metric
  }
  return {
    sent: counter('switchboard_mail_sent_total', 'Mail messages delivered over SMTP or written to the outbox.'),
    failures: counter('switchboard_mail_failures_total', 'Mail messages given up on after their retries.'),
  }
})
