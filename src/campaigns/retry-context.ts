import type { RetryContext } from '../upstream/schemas.ts'

/**
 * `retry_context` for a follow-up, so the agent resumes instead of starting over:
 * - `collected_data`: the previous call's parameters (minus the phone number), then what earlier retries
 *   collected, then the previous call's results — later sources win, null/empty values are left out;
 * - `retry_language`: the option, else a language the results detected (`language`, `detected_language`,
 *   `retry_language`), else the previous retry_context's, else a `language` parameter;
 * - `retry_stage_id`: the option, else the results' stage (`stage_id`, `retry_stage_id`, `stage`,
 *   `last_stage_id`), else the previous retry_context's;
 * - `retry_initial_message`: the option (text, or a function of the previous status), else the previous
 *   retry_context's. Fields with no value are omitted rather than sent empty.
 */
export interface RetryContextSource {
  status: string
  results: Record<string, unknown> | null
  /** The previous call's parameters, name → value. */
  parameters: Record<string, string> | null
  previous: RetryContext | null
}

export interface RetryContextOptions {
  initialMessage?: string | ((source: RetryContextSource) => string | undefined)
  language?: string
  stageId?: string
  /** Parameter names never copied into collected_data. */
  excludeParameters?: string[]
}

function present(value: unknown): boolean {
  return value !== null && value !== undefined && !(typeof value === 'string' && value.trim() === '')
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (present(v) && (typeof v === 'string' || typeof v === 'number')) return String(v)
  return undefined
}

/** The `retry_context` of a follow-up, from the previous call's results and parameters. */
export function buildRetryContext(source: RetryContextSource, options: RetryContextOptions = {}): RetryContext {
  const exclude = new Set(['customer_phone', ...(options.excludeParameters ?? [])])
  const collected: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(source.parameters ?? {})) if (!exclude.has(k) && present(v)) collected[k] = v
  for (const [k, v] of Object.entries(source.previous?.collected_data ?? {})) if (present(v)) collected[k] = v
  for (const [k, v] of Object.entries(source.results ?? {})) if (present(v)) collected[k] = v

  const results = source.results ?? {}
  const context: RetryContext = {}
  if (Object.keys(collected).length > 0) context.collected_data = collected
  const message =
    typeof options.initialMessage === 'function' ? options.initialMessage(source) : (options.initialMessage ?? source.previous?.retry_initial_message)
  if (present(message)) context.retry_initial_message = message
  const language = firstString(options.language, results.language, results.detected_language, results.retry_language, source.previous?.retry_language, source.parameters?.language)
  if (language) context.retry_language = language
  const stage = firstString(options.stageId, results.stage_id, results.retry_stage_id, results.stage, results.last_stage_id, source.previous?.retry_stage_id)
  if (stage) context.retry_stage_id = stage
  return context
}
