import type { Runtime } from '../runtime.ts'
import { callParameter } from '../reports/campaign.ts'

/**
 * The campaign a call continuing conversation `conversationId` belongs to, as the follow-up planner reads that
 * conversation's: its call's campaign in the ledger (a batch, a recipe's campaign), else the recipe that placed it,
 * else the conversation's `campaign` call parameter (a batch row's); null when it has none (a direct call) or the
 * conversation is not known here yet. A follow-up sent through `/v1` then counts with the call it follows.
 */
export async function continuedCampaign(rt: Runtime, conversationId: string): Promise<string | null> {
  const conversation = await rt.store.db
    .selectFrom('conversations')
    .select(['trace_id', 'agent_id', 'call_parameters'])
    .where('conversation_id', '=', conversationId)
    .executeTakeFirst()
  if (!conversation) return null
  if (conversation.trace_id) {
    const call = await rt.store.db.selectFrom('calls').select(['campaign', 'recipe']).where('trace_id', '=', conversation.trace_id).orderBy('created_at').executeTakeFirst()
    // A follow-up of a direct call keeps the chain's `agent:<id>` key, as the planner groups it (shown "(direct)"): it
    // was dropped for the recipe that placed that follow-up, and the next call counted under the recipe's name — in
    // the report, and against another attempt cap.
    if (call?.campaign || call?.recipe) return call.campaign || call.recipe
  }
  return callParameter(conversation.call_parameters, 'campaign') ?? null
}
