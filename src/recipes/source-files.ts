import { readdirSync } from 'node:fs'
import { join } from 'node:path'

/** What a recipe file may import from its folder: TypeScript, JavaScript and JSON. */
const SOURCE = /\.(ts|mts|cts|js|mjs|cjs|json)$/

/**
 * Every source file under a recipes folder, sub-folders (`lib/`) included and dot-folders and `node_modules` left
 * out, in a fixed order: what a recipe's verdict and a reload depend on. A folder that cannot be read has none.
 */
export function recipeSourceFiles(dir: string): string[] {
  const files: string[] = []
  const walk = (folder: string) => {
    let entries
    try {
      entries = readdirSync(folder, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile() && SOURCE.test(entry.name)) files.push(path)
    }
  }
  walk(dir)
  return files
}
