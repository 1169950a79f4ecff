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
} from './recipes/define.ts'
export type { RecipeQueries, StoredCall, StoredConversation, StoredEvent } from './recipes/queries.ts'
export type { RecipeState } from './recipes/state.ts'
export type { RecipeCampaigns, RecipeMail, RecipeReports } from './recipes/bindings.ts'
export type { PlannedEffect } from './utils/effects.ts'
