import { Histogram, type Registry } from 'prom-client'
import { noteUpstream, type UpstreamObserverHost } from '../health/upstream-observation.ts'
import { defineMetrics } from '../utils/define-metrics.ts'

/** The provider's endpoints (spec → Endpoints) as templates, so a conversation's id never becomes a label value. */
const FIXED = new Set(['/v1/call', '/v1/batch-call', '/v1/batch-calls', '/v1/conversations', '/v1/transcription/jobs'])
const TEMPLATES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\/v1\/conversations\/[^/]+\/recording$/, '/v1/conversations/{conversation_id}/recording'],
  [/^\/v1\/conversations\/[^/]+$/, '/v1/conversations/{conversation_id}'],
  [/^\/v1\/batch-calls\/[^/]+\/metrics$/, '/v1/batch-calls/{batch_id}/metrics'],
  [/^\/v1\/batch-calls\/[^/]+$/, '/v1/batch-calls/{batch_id}'],
  [/^\/v1\/transcription\/jobs\/[^/]+$/, '/v1/transcription/jobs/{job_id}'],
]

/** `GET /v1/conversations/{conversation_id}` for `GET /v1/conversations/conv_123?x=1`; `GET other` off the spec. */
export function endpointOf(method: string, pathAndQuery: string): string {
  const path = pathAndQuery.split('?', 1)[0]!.replace(/\/+$/, '') || '/'
  if (FIXED.has(path)) return `${method} ${path}`
  for (const [pattern, template] of TEMPLATES) if (pattern.test(path)) return `${method} ${template}`
  return `${method} other`
}

/** Every request switchboard sends the provider: its clients' (call queue, recipes, reconciliation, batches) and the proxy's. */
export const upstreamMetrics = defineMetrics((registers) => ({
  requestSeconds: new Histogram({
    name: 'switchboard_upstream_request_seconds',
    help: 'Requests to the provider (every client and the proxy), by endpoint and HTTP status (0: no answer); until the answer\'s headers',
    labelNames: ['endpoint', 'status'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
    registers,
  }),
}))

/** One request to the provider that ended: an answer (its status) or none (status 0, with why). */
export interface UpstreamRequest {
  method: string
  /** The path as requested (a query is ignored); named by its template in the metric. */
  path: string
  status: number
  error?: string
  /** From its start to its answer's headers (or to the failure). */
  seconds: number
}

/**
 * Every request to the provider ends here, whoever sent it (a client the runtime made, the proxy, a streamed upload):
 * `/readyz` hears how the provider is doing (src/health/upstream-observation.ts) and the duration histogram counts it.
 */
export function recordUpstreamRequest(rt: UpstreamObserverHost & { metrics: Registry }, request: UpstreamRequest): void {
  noteUpstream(rt, request.error === undefined ? { status: request.status } : { status: request.status, error: request.error })
  upstreamMetrics(rt.metrics).requestSeconds.observe({ endpoint: endpointOf(request.method, request.path), status: String(request.status) }, request.seconds)
}

/** Starts timing one request to the provider; the function it returns records how it ended (an answer's status, or 0 and why). */
export function timeUpstreamRequest(rt: UpstreamObserverHost & { metrics: Registry }, method: string, path: string): (status: number, error?: string) => void {
  const started = performance.now()
  return (status, error) => recordUpstreamRequest(rt, { method, path, status, ...(error === undefined ? {} : { error }), seconds: (performance.now() - started) / 1000 })
}
