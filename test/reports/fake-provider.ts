import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { BatchCall, BatchMetrics } from '../../src/upstream/schemas.ts'

/**
 * A loopback stand-in for the provider's two batch endpoints (GET /v1/batch-calls, GET
 * /v1/batch-calls/:id/metrics) with the spec's envelopes and bearer check — only what the report reads,
 * so the test controls exactly which batches exist. It is labelled a stand-in, not the sandbox.
 */
export async function startBatchProvider(batches: Array<{ batch: BatchCall; metrics: BatchMetrics | 'error' }>, apiKey: string): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = []
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    requests.push(`${req.method} ${url.pathname}${url.search}`)
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    if (req.headers.authorization !== `Bearer ${apiKey}`) return send(401, { error: { message: 'Invalid API key', type: 'authentication_error' } })
    if (url.pathname === '/v1/batch-calls') {
      const limit = Number(url.searchParams.get('limit') ?? 20)
      const offset = Number(url.searchParams.get('offset') ?? 0)
      const page = batches.slice(offset, offset + limit).map((b) => b.batch)
      return send(200, { data: page, has_more: offset + limit < batches.length, total: batches.length })
    }
    const m = /^\/v1\/batch-calls\/(\d+)\/metrics$/.exec(url.pathname)
    const hit = m ? batches.find((b) => b.batch.id === Number(m[1])) : undefined
    if (hit && hit.metrics === 'error') return send(500, { error: { message: 'Internal error', type: 'internal_error' } })
    if (hit) return send(200, { data: hit.metrics })
    return send(404, { error: { message: 'Resource not found', type: 'not_found' } })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export function metrics(partial: Partial<BatchMetrics>): BatchMetrics {
  return {
    avg_duration_seconds: 0, busy_count: 0, completed_count: 0, failed_count: 0, in_progress_count: 0, no_answer_count: 0,
    pending_retry_count: 0, socket_failure_count: 0, success_count: 0, success_rate: 0, total_processed: 0, unreachable_count: 0,
    ...partial,
  }
}
