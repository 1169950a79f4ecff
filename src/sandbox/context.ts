import type { Clock } from '../utils/clock.ts'
import type { Logger } from '../utils/logger.ts'
import type { BatchRunner } from './batches.ts'
import type { CallEngine } from './calls.ts'
import type { DemoTenant } from './demo.ts'
import type { Ids } from './ids.ts'
import type { createNumberRateLimiter } from './rate-limit.ts'
import type { SandboxState } from './state.ts'
import type { Timers } from './timers.ts'
import type { Transcriber } from './transcription.ts'

/** What every endpoint handler may use. */
export interface SandboxContext {
  clock: Clock
  log: Logger
  state: SandboxState
  ids: Ids
  timers: Timers
  engine: CallEngine
  batches: BatchRunner
  transcriber: Transcriber
  numberLimiter: ReturnType<typeof createNumberRateLimiter>
  maxCalls: number
  counters: { callsAccepted: number; callsScheduled: number }
}

/** One authenticated API request. */
export interface ApiRequest {
  req: Request
  url: URL
  params: Record<string, string>
  tenant: DemoTenant
  /** Public base of this sandbox as the caller reached it (for recording URLs). */
  baseUrl: string
}

export type ApiHandler = (ctx: SandboxContext, request: ApiRequest) => Promise<Response> | Response
