import { statSync } from 'node:fs'
import { recipeSourceFiles } from './source-files.ts'

/**
 * What a recipes folder holds, cheaply: each source file's path, size and modification time (the files a reload
 * reads: src/recipes/source-files.ts). Two equal fingerprints mean nothing a reload would read has changed. A readdir
 * and a stat per file, for an engine that does not watch the folder (a `serve` receiver's): its dashboard and
 * `/admin/recipes` listed the recipes as first loaded, while the processing side had long reloaded.
 */
export function folderFingerprint(dir: string): string {
  const parts: string[] = []
  for (const path of recipeSourceFiles(dir)) {
    try {
      const info = statSync(path)
      parts.push(`${path}\0${info.size}\0${info.mtimeMs}`)
    } catch {
      // Removed between the listing and the stat: the next look sees it gone.
    }
  }
  return parts.join('\n')
}
