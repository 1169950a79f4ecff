import type { Config } from '../config/load.ts'
import type { PlannedEffect } from '../utils/effects.ts'
import type { Logger } from '../utils/logger.ts'
import type { VoiceClient } from '../upstream/client.ts'
import type { WebhookEventType } from '../upstream/schemas.ts'
import type { ProcessedEvent } from '../webhooks/hooks.ts'
import type { RecipeQueries } from './queries.ts'
import type { RecipeState } from './state.ts'
import type { RecipeCampaigns, RecipeMail, RecipeReports } from './bindings.ts'

/** What started a run. `catchup` is a scheduled tick missed while the service was down, run at start-up. */
export type RecipeTriggerType = 'cron' | 'event' | 'manual' | 'catchup'

export interface RecipeTrigger {
  type: RecipeTriggerType
  /** The stored event, for event triggers. */
  event?: ProcessedEvent
  /** The tick being run (epoch ms), for cron and catch-up triggers. */
  scheduledAt?: number
}

/** What `run(ctx)` receives. In a dry run every side effect (call, batch, mail) lands in `plan` instead. */
export interface RecipeContext {
  /** The recipe's name (its file name without `.ts`). */
  name: string
  trigger: RecipeTrigger
  dryRun: boolean
  /** The run's start, from the service clock. */
  now: Date
  /** The recipe's time zone: its own `timezone`, else RECIPES_TIMEZONE. */
  timezone: string
  log: Logger
  /** The typed provider client with the workspace key. */
  client: VoiceClient
  /** Read access to stored conversations, webhook events and calls. */
  data: RecipeQueries
  /** The campaign toolkit, bound to this service and this run (side effects go through the plan). */
  campaigns: RecipeCampaigns
  /** Report helpers, bound likewise. */
  reports: RecipeReports
  mail: RecipeMail
  /** Small JSON key/value state kept between runs, private to this recipe. */
  state: RecipeState
  /** Side effects planned (dry run) or performed so far in this run. */
  plan: PlannedEffect[]
  /** The service configuration (DATA_DIR, REPORT_TO, DEFAULT_COUNTRY, …). */
  config: Readonly<Config>
}

export interface RecipeDefinition<Result = unknown> {
  description: string
  /** A croner pattern (5 or 6 fields, e.g. `0 8 * * *`), evaluated in `timezone`. */
  schedule?: string
  /** IANA time zone for `schedule` and `ctx.timezone`; defaults to RECIPES_TIMEZONE. */
  timezone?: string
  /** Webhook event types that trigger a run (once per event, even if delivered twice). */
  on?: WebhookEventType[]
  /** The work. What it returns is recorded as the run's summary. */
  run(ctx: RecipeContext): Result | Promise<Result>
}

/**
 * Declares a recipe: `export default defineRecipe({ description, schedule?, timezone?, on?, run })` in
 * `recipes/<name>.ts`. An identity function that gives the file its types; the loader validates it.
 */
export function defineRecipe<Result = unknown>(definition: RecipeDefinition<Result>): RecipeDefinition<Result> {
  return definition
}
