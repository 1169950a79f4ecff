import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve, sep } from 'node:path'

/** Node's CommonJS module cache, where jiti's native `require` keeps the JSON files a recipe imports. */
const required = createRequire(import.meta.url).cache
/** This installation's own folder: never forgotten, whatever RECIPES_DIR holds (a folder above it, say). */
const INSTALLATION = resolve(import.meta.dirname, '../..') + sep

/**
 * Forgets the modules Node required from `dir`, so the next load reads them afresh. jiti compiles TypeScript and ESM
 * `.js` itself and reads them anew on each load (its module cache is off), but hands JSON to Node's `require`, which
 * kept it: a recipe importing `./agents.json` ran with the file as it was at the first load, edit after edit, while the
 * type check read the new one. A native addon (`.node`) stays: Node cannot load one twice. What jiti imports natively
 * (`.cjs`, CommonJS `.js`, `.mjs`, packages) Node's module loader keeps for the process's life: the README says to
 * restart the service after changing those.
 */
export function forgetRequiredUnder(dir: string): void {
  let root: string
  try {
    root = realpathSync(dir) + sep
  } catch {
    return
  }
  for (const key of Object.keys(required)) {
    if (key.startsWith(root) && !key.startsWith(INSTALLATION) && !key.endsWith('.node')) delete required[key]
  }
}
