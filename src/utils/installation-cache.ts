import { resolve } from 'node:path'

/**
 * The installation's cache folder, `node_modules/.cache/switchboard/` of this checkout: the bundle `serve` runs
 * (src/bundle.mjs, whose `defaultCacheDir` is this same folder), type verdicts, compiled recipes. Inside node_modules,
 * so `npm ci` starts it afresh and git never sees it; private to the installation, unlike the system's tmp folder.
 */
export function installationCacheDir(...parts: string[]): string {
  return resolve(import.meta.dirname, '../../node_modules/.cache/switchboard', ...parts)
}
