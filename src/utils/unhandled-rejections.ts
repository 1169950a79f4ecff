import { Counter, type Registry } from 'prom-client'
import type { Logger } from './logger.ts'

/**
 * A promise rejected with no handler — in practice a recipe's detached promise (`void fetch(…)`) — would end
 * the process under Node's default, and with it the receiver (`--role all`, `receiver`) or the worker's
 * processing. `serve` (and its processing thread) logs it with its stack and a counter instead, and goes on:
 * nothing awaited that promise, so no run or event is left waiting on it. A synchronous throw from a
 * detached timer is recipe code's own in the processing thread (src/recipes/uncaught-recipe-errors.ts): logged
 * too; any other ends the thread, which is restarted (README → What happens when…).
 */
export function logUnhandledRejections(rt: { log: Logger; metrics: Registry }): () => void {
  const counter = new Counter({ name: 'switchboard_unhandled_rejections_total', help: 'Promises rejected with no handler (logged; the process keeps running).', registers: [rt.metrics] })
  const onRejection = (reason: unknown) => {
    counter.inc()
    rt.log.error({ err: reason }, 'unhandled promise rejection (often a recipe\'s detached promise); logged, the service keeps running')
  }
  process.on('unhandledRejection', onRejection)
  return () => process.off('unhandledRejection', onRejection)
}
