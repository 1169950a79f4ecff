import type { Runtime } from '../runtime.ts'
import { isProviderEvent, type EventConsumer } from '../events/hooks.ts'
import { chunks } from '../utils/chunks.ts'
import { invalidate, scope } from './invalidation-marks.ts'

const KINDS_BY_AGENT = ['batch', 'batch_list', 'batch_metrics']
/** Ids per statement: well under SQLite's bound-variable limit. */
const CHUNK = 400

/**
 * The proxy cache's step of the pipeline: what a batch of provider events touched — each conversation
 * (and its not-found entry), every conversation list, and the batches of the agents involved — is deleted
 * in one statement per chunk instead of one per event. Each chunk marks what it covers first
 * (invalidation-marks.ts): a proxy request that asked upstream before this runs must not store its answer after.
 */
export function cacheInvalidationConsumer(rt: Runtime): EventConsumer {
  return async (batch) => {
    const calls = batch.filter(isProviderEvent).map((e) => e.event.data.call)
    if (calls.length === 0) return
    const conversations = [...chunks([...new Set(calls.map((c) => c.conversation_id))], CHUNK)]
    const agents = [...chunks([...new Set(calls.map((c) => c.agent_id))], CHUNK)]
    // Statement i takes the i-th chunk of each list (either may run out first): every id is covered once.
    for (let i = 0; i < Math.max(conversations.length, agents.length); i++) {
      const ids = conversations[i]
      const agentIds = agents[i]
      // Lists and agents only (a few marks per batch): see scopesOf for why single conversations are not marked.
      const scopes = [scope.allConversationLists, scope.agent(null), ...(agentIds ?? []).map(scope.agent)]
      await invalidate(rt, scopes, () =>
        rt.store.db
          .deleteFrom('cache_entries')
          .where((eb) =>
            eb.or([
              eb('kind', '=', 'conversation_list'),
              eb.and([eb('kind', 'in', KINDS_BY_AGENT), eb('agent_id', 'is', null)]),
              ...(ids ? [eb.and([eb('kind', 'in', ['conversation', 'not_found']), eb('resource_id', 'in', ids)])] : []),
              ...(agentIds ? [eb.and([eb('kind', 'in', KINDS_BY_AGENT), eb('agent_id', 'in', agentIds)])] : []),
            ]),
          )
          .execute(),
      )
    }
  }
}
