/**
 * The public API: what recipe files import as `switchboard`, and what embedders use.
 */
export { defineConfig, type SwitchboardConfig } from './config/define.ts'
export { createVoiceClient, type VoiceClient, type VoiceClientOptions } from './upstream/client.ts'
export { VoiceApiError, isVoiceApiError } from './upstream/errors.ts'
export * from './upstream/schemas.ts'
export {
  defineRecipe,
  type RecipeContext,
  type RecipeDefinition,
  type RecipeTrigger,
  type RecipeTriggerType,
  type RecipeSubscription,
} from './recipes/define.ts'
export type { ProcessedEvent, TargetEvent, PipelineEvent } from './events/hooks.ts'
export type {
  CallQuery,
  ConversationQuery,
  ConversationStatus,
  EventQuery,
  Instant,
  RecipeQueries,
  StoredCall,
  StoredConversation,
  StoredEvent,
} from './recipes/queries.ts'
export type { RecipeState } from './recipes/state.ts'
export type { RecipeCampaigns, RecipeMail, RecipeReports } from './recipes/bindings.ts'
export type {
  CallPlan,
  NewCall,
  ScheduleCallOptions,
  ScheduleCallOutcome,
  LaunchBatchInput,
  LaunchBatchResult,
  RunFollowUpsOptions,
  RunFollowUpsResult,
  PreparedBatch,
  BatchRow,
  Reject,
  CallingWindow,
  PhoneResult,
} from './campaigns/index.ts'
export type { MailMessage, MailResult } from './reports/index.ts'
export { ArgumentError } from './utils/argument-error.ts'
export { testRecipe, type TestRecipeOptions, type TestRecipeResult, type TestRecipeLogLevel } from './recipes/test-recipe.ts'
export type { PlannedEffect } from './effects.ts'
export { defineDestination, type DestinationInput, type ForwardedEvent, type ForwardedBody, type DestinationFilter } from './config/destinations.ts'
export type { RecipeDestinations, PublishOptions, PublishResult } from './destinations/publish.ts'
