import type { ApiHandler } from '../context.ts'
import { batchMetrics, serializeBatch } from '../batches.ts'
import { readBatchCsv } from '../csv.ts'
import { invalid, notFound } from '../errors.ts'
import { formInteger, json, readListQuery, readMultipart, MAX_FORM_BYTES } from '../request.ts'

/** POST /v1/batch-call (multipart: agent_id, name, file) */
export const createBatch: ApiHandler = async (ctx, { req, tenant }) => {
  const form = await readMultipart(req, MAX_FORM_BYTES.csv)
  const agentId = formInteger(form, 'agent_id')
  const name = form.get('name')
  if (typeof name !== 'string' || !name.trim()) throw invalid('name is required')
  const file = form.get('file')
  if (file === null) throw invalid('file is required (a CSV with a customer_phone column)')
  if (typeof file === 'string') throw invalid('file must be an uploaded CSV file, not a text field')
  const agent = ctx.state.agentOf(tenant, agentId)
  if (!agent) throw notFound('agent not found')
  if (!agent.fromPhone) throw invalid('agent has no phone number configured')
  const rows = await readBatchCsv(file)
  const batch = ctx.batches.create({ tenant, agent, name: name.trim(), rows })
  return json({ data: serializeBatch(batch) })
}

/** GET /v1/batch-calls — envelope {data, has_more, total}, newest first (not shown in the spec). */
export const listBatches: ApiHandler = (ctx, { url, tenant }) => {
  const q = readListQuery(url)
  const page = ctx.state.listBatches(tenant.id, q)
  return json({ data: page.items.map(serializeBatch), has_more: page.hasMore, total: page.total })
}

function findBatch(ctx: Parameters<ApiHandler>[0], tenantId: string, raw: string) {
  const id = /^\d+$/.test(raw) ? Number(raw) : NaN
  const batch = Number.isSafeInteger(id) ? ctx.state.batch(tenantId, id) : undefined
  if (!batch) throw notFound('batch not found')
  return batch
}

/** GET /v1/batch-calls/{id} — {data: batch record} (not shown in the spec). */
export const getBatch: ApiHandler = (ctx, { params, tenant }) => json({ data: serializeBatch(findBatch(ctx, tenant.id, params.id!)) })

/** GET /v1/batch-calls/{id}/metrics */
export const getBatchMetrics: ApiHandler = (ctx, { params, tenant }) => json({ data: batchMetrics(findBatch(ctx, tenant.id, params.id!)) })
