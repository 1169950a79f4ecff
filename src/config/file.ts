import { existsSync, statSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { installationCacheDir } from '../utils/installation-cache.ts'
import { ConfigError, loadConfig, type Config, type LoadConfigOptions } from './load.ts'
import type { SwitchboardConfig } from './define.ts'

/**
 * Finds the optional typed config file: `SWITCHBOARD_CONFIG` if set (`none` for no file at all), else
 * `switchboard.config.ts` in the working directory. Returns undefined when there is none.
 */
export function findConfigFile(env: Record<string, string | undefined>, cwd: string): string | undefined {
  const named = env.SWITCHBOARD_CONFIG
  // `none`: the environment alone, even beside a switchboard.config.ts (a second instance from the same checkout; tests).
  if (named?.trim().toLowerCase() === 'none') return undefined
  if (named) {
    // As every variable: only spaces is a mistake ("names a file that does not exist: /here/ " said something else).
    if (!named.trim()) throw new ConfigError('SWITCHBOARD_CONFIG', 'is blank (only spaces): leave it empty or unset for ./switchboard.config.ts, none for no file, or name the file')
    const path = isAbsolute(named) ? named : resolve(cwd, named)
    if (!existsSync(path)) throw new ConfigError('SWITCHBOARD_CONFIG', `names a file that does not exist: ${path}`)
    // A folder was "could not load …: Cannot find module".
    if (statSync(path).isDirectory()) throw new ConfigError('SWITCHBOARD_CONFIG', `names a folder, not a file: ${path} (name the config file itself, e.g. ${resolve(path, 'switchboard.config.ts')})`)
    return path
  }
  const path = resolve(cwd, 'switchboard.config.ts')
  return existsSync(path) ? path : undefined
}

/**
 * The config file's module, loaded fresh (TypeScript through jiti; `switchboard` resolves to this service). jiti is
 * imported here, not at the top: most starts have no config file, and loading jiti (~190 KB of CommonJS that Node's
 * ESM loader scans for its exports) was a tenth of a CLI command's start.
 */
export async function importConfigFile(file: string): Promise<unknown> {
  const { createJiti } = await import('jiti')
  const jiti = createJiti(import.meta.url, { moduleCache: false, fsCache: installationCacheDir('jiti'), interopDefault: false, alias: { switchboard: resolve(import.meta.dirname, '../index.ts') } })
  return jiti.import(file)
}

/** Reads the environment and, when present, switchboard.config.ts (the environment wins). */
export async function resolveConfig(options: LoadConfigOptions = {}): Promise<Config> {
  const env = options.env ?? process.env
  const cwd = options.cwd ?? process.cwd()
  const file = findConfigFile(env, cwd)
  if (!file) return loadConfig({ ...options, env, cwd })
  // A mistake in the file is named after what chose it: SWITCHBOARD_CONFIG when it is set, else the file itself
  // (found in the working directory, so a user who never set SWITCHBOARD_CONFIG is not told about it).
  const fail = env.SWITCHBOARD_CONFIG ? (detail: string) => new ConfigError('SWITCHBOARD_CONFIG', detail) : (detail: string) => new ConfigError('switchboard.config.ts', detail)
  let loaded: unknown
  try {
    loaded = await importConfigFile(file)
  } catch (error) {
    throw fail(`could not load ${describeLoadError(file, error)}`)
  }
  const module = loaded as { default?: unknown } | null
  if (typeof module !== 'object' || module === null || !('default' in module)) {
    throw fail(`${file} has no default export: write export default defineConfig({ … })`)
  }
  const config = module.default
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw fail(`${file} must export default defineConfig({ … }) (its default export is not an object)`)
  }
  return loadConfig({ ...options, env, cwd, file: { ...(config as SwitchboardConfig), ...options.file }, fileName: file })
}

/**
 * One line for a file that does not load: where and what. A syntax error: `file:line:col` from the parser's own
 * line in the message (its column counts from 0; editors count from 1). A throw: `file:line` from the first stack
 * frame in the file — its column is not worth showing: jiti runs a transformed copy, which starts with a wrapper
 * on line 1 (a throw at column 1 reads as column 200) and has its types stripped.
 */
function describeLoadError(file: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const lines = message.split('\n').map((l) => l.trim()).filter(Boolean)
  const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const at = new RegExp(`${escaped}:(\\d+):(\\d+)`)
  const parsed = at.exec(message)
  const thrown = parsed ? undefined : at.exec(error instanceof Error ? (error.stack ?? '') : '')
  const where = parsed ? `${file}:${parsed[1]}:${Number(parsed[2]) + 1}` : thrown ? `${file}:${thrown[1]}` : file
  const what = (lines.find((l) => !l.startsWith(file) && !l.includes(`${file}:`)) ?? 'unknown error').replace(/^ParseError:\s*/, '').trim()
  return `${where}: ${what}`
}
