import { Counter } from 'prom-client'
import { defineMetrics } from '../utils/define-metrics.ts'

export interface MailMetrics {
  sent: Counter<'transport'>
  failures: Counter<'transport'>
}

/**
 * The mail counters on a runtime's registry. Counters already on it are taken as they are: a recipe's own copy of
 * this module (a recipe that imports the report code itself) counts into the same series.
 */
export const mailMetrics = defineMetrics((registers): MailMetrics => {
  const counter = (name: string, help: string) =>
    (registers[0]?.getSingleMetric(name) as Counter<'transport'> | undefined) ?? new Counter({ name, help, labelNames: ['transport'], registers })
  return {
    sent: counter('switchboard_mail_sent_total', 'Mail messages delivered over SMTP or written to the outbox.'),
    failures: counter('switchboard_mail_failures_total', 'Mail messages given up on after their retries.'),
  }
})
