/**
 * The public API: what recipe files import as `switchboard`, and what embedders use.
 */
export { defineConfig, type SwitchboardConfig } from './config/define.ts'
export { createVoiceClient, type VoiceClient, type VoiceClientOptions } from './upstream/client.ts'
export { VoiceApiError, isVoiceApiError } from './upstream/errors.ts'
export * from './upstream/schemas.ts'
