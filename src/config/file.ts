import { existsSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { createJiti } from 'jiti'
import { ConfigError, loadConfig, type Config, type LoadConfigOptions } from './load.ts'
import type { SwitchboardConfig } from './define.ts'

/**
 * Finds the optional typed config file: `SWITCHBOARD_CONFIG` if set, else `switchboard.config.ts` in the
 * working directory. Returns undefined when there is none.
 */
export function findConfigFile(env: Record<string, string | undefined>, cwd: string): string | undefined {
  const named = env.SWITCHBOARD_CONFIG
  if (named) {
    const path = isAbsolute(named) ? named : resolve(cwd, named)
    if (!existsSync(path)) throw new ConfigError('SWITCHBOARD_CONFIG', `names a file that does not exist: ${path}`)
    return path
  }
  const path = resolve(cwd, 'switchboard.config.ts')
  return existsSync(path) ? path : undefined
}

/** Reads the environment and, when present, switchboard.config.ts (the environment wins). */
export async function resolveConfig(options: LoadConfigOptions = {}): Promise<Config> {
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  const file = findConfigFile(env, cwd)
  if (!file) return loadConfig({ ...options, env, cwd })
  let loaded: unknown
  try {
    const jiti = createJiti(import.meta.url, { moduleCache: false, fsCache: false, alias: { switchboard: resolve(import.meta.dirname, '../index.ts') } })
    loaded = await jiti.import(file, { default: true })
  } catch (error) {
    throw new ConfigError('SWITCHBOARD_CONFIG', `could not load ${file}: ${(error as Error).message.split('\n')[0]}`)
  }
  if (typeof loaded !== 'object' || loaded === null || Array.isArray(loaded)) {
    throw new ConfigError('SWITCHBOARD_CONFIG', `${file} must export default defineConfig({ … })`)
  }
  return loadConfig({ ...options, env, cwd, file: { ...(loaded as SwitchboardConfig), ...options.file } })
}
