import type { CallRequest } from './upstream/schemas.ts'

/**
 * Side effects a recipe can cause. In a dry run each is appended to the run's plan instead of executed;
 * in a real run the executed effects are appended too, so a run record shows what it did.
 */
export type PlannedEffect =
  | {
      kind: 'call'
      request: CallRequest
      recipe?: string | null
      campaign?: string | null
      /** Why this call (e.g. "follow-up 2/3 after no_answer"). */
      note?: string
    }
  | {
      kind: 'batch'
      agent_id: number
      name: string
      /** Each row as an object with customer_phone and the other columns. */
      rows: Array<Record<string, string>>
      rejects: Array<{ row: number; raw: string; reason: string }>
      /** In a run's record (src/recipes/kept-plan.ts): the rows past the first 500, left out. */
      rows_omitted?: number
      /** In a run's record: the rejected rows past the first 500, left out. */
      rejects_omitted?: number
    }
  | {
      kind: 'mail'
      to: string[]
      subject: string
      attachments?: string[]
    }
  | {
      /** A dry run's write to the recipe's `ctx.state`, kept for the run only (src/recipes/state.ts). */
      kind: 'state'
      action: 'set' | 'delete'
      key: string
      /** The value as JSON (`set` only). */
      value?: string
    }
  | {
      /** A number added to or removed from the do-not-call table (the file is never changed): only when the table changed. */
      kind: 'dnc'
      action: 'add' | 'remove'
      /** E.164, as the list keys it. */
      phone: string
      /** Why it was added (`add` only). */
      reason?: string | null
    }
  | {
      /** An event a recipe published to destinations (src/destinations). */
      kind: 'publish'
      event_type: string
      event_id: string
      destinations: string[]
    }

export interface Effects {
  dryRun: boolean
  plan: PlannedEffect[]
}

/** For code paths outside recipes: execute, and keep a record nobody reads. */
export function liveEffects(): Effects {
  return { dryRun: false, plan: [] }
}
