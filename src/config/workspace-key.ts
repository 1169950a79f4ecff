import type { Config } from './load.ts'

/** The key switchboard uses as its own workspace key in sandbox mode: the sandbox's first demo workspace (src/sandbox/demo.ts). */
export const SANDBOX_WORKSPACE_KEY = 'sk_test_acme'

/** The key switchboard calls the provider with for its own work (recipes, the call queue, reconciliation): VOICE_API_KEY, else the sandbox's. */
export function workspaceKey(config: Pick<Config, 'voiceApiKey'>): string {
  return config.voiceApiKey ?? SANDBOX_WORKSPACE_KEY
}
