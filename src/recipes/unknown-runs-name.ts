import { basename } from 'node:path'
import { listRecipeFiles } from './loader.ts'

/**
 * Why `name` is no recipe whose runs can be listed, or undefined when it is one: its file is in RECIPES_DIR now, or
 * runs are recorded for it (the history keeps a removed recipe's runs). Asked once its listing came back empty — a
 * name with runs is known without a look at the folder — so a mistyped name is a mistake (exit 2, 404), not a recipe
 * that never ran. Only the file names are read: no recipe code runs.
 */
export function unknownRecipeForRuns(dir: string, name: string, runsFound: number): string | undefined {
  if (runsFound > 0) return undefined
  const known = listRecipeFiles(dir).map((f) => basename(f, '.ts'))
  if (known.includes(name)) return undefined
  return `no recipe named "${name}" in ${dir}, nor any run recorded for one${known.length ? ` (recipes: ${known.join(', ')})` : ''}`
}
