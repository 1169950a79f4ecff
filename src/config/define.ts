import type { EnvInput } from './schema.ts'

/** The optional `switchboard.config.ts`: the same keys as the environment variables; the environment wins. */
export type SwitchboardConfig = Partial<EnvInput>

export function defineConfig(config: SwitchboardConfig): SwitchboardConfig {
  return config
}
