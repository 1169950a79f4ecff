import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

/**
 * What a recipes folder holds, cheaply: every file's path, size and modification time (sub-folders such as `lib/`
 * included; dot-files and `node_modules` left out). Two equal fingerprints mean nothing a reload would read has
 * changed. A readdir and a stat per file, for an engine that does not watch the folder (a `serve` receiver's): its
 * dashboard and `/admin/recipes` listed the recipes as first loaded, while the processing side had long reloaded.
 */
export function folderFingerprint(dir: string): string {
  const parts: string[] = []
  const walk = (folder: string) => {
    let entries
    try {
      entries = readdirSync(folder, { withFileTypes: true })
    } catch {
      parts.push(`${folder}\0missing`)
      return
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else {
        try {
          const info = statSync(path)
          parts.push(`${path}\0${info.size}\0${info.mtimeMs}`)
        } catch {
          // Removed between the readdir and the stat: the next look sees it gone.
        }
      }
    }
  }
  walk(dir)
  return parts.join('\n')
}
