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
    loaded = await jiti.import(file)
  } catch (error) {
    throw new ConfigError('SWITCHBOARD_CONFIG', `could not load ${describeLoadError(file, error)}`)
  }
  const module = loaded as { default?: unknown } | null
  if (typeof module !== 'object' || module === null || !('default' in module)) {
    throw new ConfigError('SWITCHBOARD_CONFIG', `${file} has no default export: write export default defineConfig({ … })`)
  }
  const config = module.default
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new ConfigError('SWITCHBOARD_CONFIG', `${file} must export default defineConfig({ … }) (its default export is not an object)`)
  }
  return loadConfig({ ...options, env, cwd, file: { ...(config as SwitchboardConfig), ...options.file }, fileName: file })
}

/**
 * One line for a file that does not load: where (file:line:col, which jiti puts on a line of its own for a
 * syntax error, or the first frame in the file for a throw) and what.
 */
function describeLoadError(file: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean)
  const text = `${message}\n${error instanceof Error ? (error.stack ?? '') : ''}`
  const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const where = new RegExp(`${escaped}:\\d+:\\d+`).exec(text)?.[0] ?? file
  const what = (lines.find((l) => !l.startsWith(file) && !l.includes(`${file}:`)) ?? 'unknown error').replace(/^ParseError:\s*/, '').trim()
  return `${where}: ${what}`
}
