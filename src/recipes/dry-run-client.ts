import { parse } from 'csv-parse/sync'
import type { Effects } from '../effects.ts'
import { checkRecipeCallRequest, type CallCreation, type UploadFile, type VoiceClient } from '../upstream/client.ts'
import type { BatchCall, CallRequest, CallResponse } from '../upstream/schemas.ts'

/** The text of an upload, as the provider would read it. */
async function uploadText(file: UploadFile): Promise<string> {
  if (typeof file.data === 'string') return file.data
  if (file.data instanceof Uint8Array) return new TextDecoder().decode(file.data)
  return file.data.text()
}

/** What a dry run answers for a call it did not place: plainly not the provider's (no trace id, status `dry_run`). */
function unplacedCall(request: CallRequest): CallResponse {
  return { agent_id: request.agent_id, conversation_id: null, scheduled_for: request.scheduled_for ?? null, status: 'dry_run', trace_id: '' }
}

/**
 * `ctx.client` in a dry run: reads go to the provider as in a real run; what would reach people — a call
 * (`createCall`, `createCallRaw`) or a batch (`createBatch`) — goes into the run's plan instead, and is answered with
 * status `dry_run` (a call with no trace id, a batch with id 0). DESIGN: in a dry run every call, batch and mail is
 * planned, not executed — also one a recipe places straight through the client, past the campaign rules.
 */
export function dryRunClient(client: VoiceClient, effects: Effects, recipe: string): VoiceClient {
  const note = 'placed with ctx.client (not by the campaign rules): not placed in a dry run'
  // Checked as the real client checks it: a request the provider's client would refuse is refused here too, with the
  // same one-line message, rather than planned as if it would go through.
  const createCallRaw = async (given: CallRequest, method: 'createCall' | 'createCallRaw' = 'createCallRaw'): Promise<CallCreation> => {
    const request = checkRecipeCallRequest(given, method)
    effects.plan.push({ kind: 'call', request, recipe, note })
    const call = unplacedCall(request)
    return { call, status: 200, body: JSON.stringify({ data: call }), contentType: 'application/json', unexpectedShape: undefined }
  }
  const overrides: Pick<VoiceClient, 'createCall' | 'createCallRaw' | 'createBatch'> = {
    createCallRaw: (request) => createCallRaw(request),
    async createCall(request) {
      return (await createCallRaw(request, 'createCall')).call
    },
    async createBatch({ agent_id, name, file }) {
      const records = parse(await uploadText(file), { columns: true, skip_empty_lines: true, bom: true, relax_column_count: true }) as Array<Record<string, string>>
      effects.plan.push({ kind: 'batch', agent_id, name, rows: records, rejects: [] })
      const batch: BatchCall = { id: 0, name, agent_id, status: 'dry_run', total_recipients: records.length, created_at: new Date(0).toISOString() }
      return batch
    },
  }
  // The client's other members (reads, its lastRateLimit getter) are its own, through the prototype.
  return Object.assign(Object.create(client) as VoiceClient, overrides)
}
