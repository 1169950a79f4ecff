import type { Config } from '../config/load.ts'
import type { PlannedEffect } from '../effects.ts'
import type { Logger } from '../utils/logger.ts'
import type { VoiceClient } from '../upstream/client.ts'
import type { WebhookEventType } from '../upstream/schemas.ts'
import type { PipelineEvent, ProcessedEvent, TargetEvent } from '../events/hooks.ts'
import type { RecipeQueries } from './queries.ts'
import type { RecipeState } from './state.ts'
import type { RecipeCampaigns, RecipeMail, RecipeReports } from './bindings.ts'
import type { RecipeDestinations } from '../destinations/publish.ts'

/** What started a run. `catchup` is a scheduled tick missed while the service was down, run at start-up. */
export type RecipeTriggerType = 'cron' | 'event' | 'manual' | 'catchup'

/**
 * What a recipe can subscribe to: a provider event type (`call.no_answer`), or `<target>:<event type>` for
 * events received on a named target (`crm:contact.updated`; `crm:*` for all of that target's events).
 */
export type RecipeSubscription = WebhookEventType | `${string}:${string}`

/** The events a recipe receives for its subscriptions: zod-typed provider events, or named targets' events. */
export type TriggerEventFor<On extends string> = On extends `${string}:${string}` ? TargetEvent : ProcessedEvent

export interface RecipeTrigger<E extends PipelineEvent = ProcessedEvent> {
  type: RecipeTriggerType
  /**
   * Event triggers: the events that arrived together, oldest first (at most RECIPE_BATCH_MAX) — each
   * delivered to this recipe exactly once across redelivery, replay, crashes and replicas — so a burst is
   * planned in one pass.
   */
  events?: E[]
  /** The first of `events` (for recipes written for one event at a time). */
  event?: E
  /** The tick being run (epoch ms), for cron and catch-up triggers. */
  scheduledAt?: number
}

/** What `run(ctx)` receives. In a dry run every side effect (call, batch, mail) lands in `plan` instead. */
export interface RecipeContext<E extends PipelineEvent = ProcessedEvent> {
  /** The recipe's name (its file name without `.ts`). */
  name: string
  /** What started this run: `{ type: 'cron' | 'event' | 'manual' | 'catchup', events?, event?, scheduledAt? }`. */
  trigger: RecipeTrigger<E>
  /** True when every call, batch and mail goes into `plan` instead of happening (`recipes run --dry-run`, `recipes test`). */
  dryRun: boolean
  /** The run's start, from the service clock. */
  now: Date
  /** The recipe's time zone: its own `timezone`, else RECIPES_TIMEZONE. */
  timezone: string
  /** A pino logger tagged with the recipe and run: `ctx.log.info({ n }, 'message')`. */
  log: Logger
  /** The typed provider client with the workspace key. */
  client: VoiceClient
  /** Read access to stored conversations, webhook events and calls. */
  data: RecipeQueries
  /** The campaign toolkit, bound to this service and this run (side effects go through the plan). */
  campaigns: RecipeCampaigns
  /** Report helpers, bound likewise. */
  reports: RecipeReports
  /** Mail over SMTP_URL (or into DATA_DIR/outbox), planned only in a dry run. */
  mail: RecipeMail
  /** Publish the recipe's own events (e.g. `followup.scheduled`) to DESTINATIONS; planned only in a dry run. */
  destinations: RecipeDestinations
  /** Small JSON key/value state kept between runs, private to this recipe. */
  state: RecipeState
  /** Side effects planned (dry run) or performed so far in this run. */
  plan: PlannedEffect[]
  /** The service configuration (DATA_DIR, REPORT_TO, DEFAULT_COUNTRY, …). */
  config: Readonly<Config>
}

export interface RecipeDefinition<Result = unknown, On extends RecipeSubscription = WebhookEventType> {
  description: string
  /** A croner pattern (5 or 6 fields, e.g. `0 8 * * *`), evaluated in `timezone`. */
  schedule?: string
  /** IANA time zone for `schedule` and `ctx.timezone`; defaults to RECIPES_TIMEZONE. */
  timezone?: string
  /**
   * Events that trigger a run: provider event types, or `<target>:<type>` for a named target's events.
   * Events that arrive together run as one batch (`ctx.trigger.events`); each event reaches the recipe
   * exactly once, even if delivered twice.
   */
  on?: On[]
  /** The work. What it returns is recorded as the run's summary. */
  run(ctx: RecipeContext<TriggerEventFor<On>>): Result | Promise<Result>
}

/**
 * Declares a recipe: `export default defineRecipe({ description, schedule?, timezone?, on?, run })` in
 * `recipes/<name>.ts`. An identity function that gives the file its types; the loader validates it.
 */
export function defineRecipe<Result = unknown, On extends RecipeSubscription = WebhookEventType>(
  definition: RecipeDefinition<Result, On>,
): RecipeDefinition<Result, On> {
  return definition
}
