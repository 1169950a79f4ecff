import pino, { type DestinationStream, type Logger } from 'pino'
import { boundLogLine } from './log-line-bound.ts'

export type { Logger }

/**
 * Structured JSON logs (one object a line). Callers pass ids (event_id, conversation_id, trace_id) as
 * fields; secrets, signatures and API keys are redacted even if a caller passes them by mistake. No line is longer
 * than LOG_LINE_MAX_BYTES (src/utils/log-line-bound.ts): a longer one has its long lists and texts cut.
 */
export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: undefined,
      hooks: { streamWrite: boundLogLine },
      redact: {
        paths: [
          'secret', 'secrets', 'signature', 'apiKey', 'api_key', 'authorization', 'password',
          'headers.authorization', 'headers["x-formantai-signature"]', 'headers["webhook-signature"]',
        ],
        censor: '[redacted]',
      },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  )
}

/** A logger that drops everything (tests that do not look at logs). */
export function createSilentLogger(): Logger {
  return pino({ level: 'silent' })
}
