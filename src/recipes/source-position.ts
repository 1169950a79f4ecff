import { readFileSync, statSync } from 'node:fs'
import { createRequire, SourceMap } from 'node:module'

/**
 * What jiti puts before a recipe's compiled code on its first line when it evaluates it (`jiti.import`, which recipes
 * and the helpers they import are loaded with): V8's columns on line 1 count it.
 */
const ASYNC_WRAPPER = '(async function (exports, require, module, __filename, __dirname, jitiImport, jitiESMResolve) { '

/** Files whose maps are kept (a folder of recipes and their helpers). */
const KEPT = 200

const maps = new Map<string, { mtimeMs: number; size: number; map: SourceMap | undefined }>()

/**
 * Where a place in a recipe file as it ran is in the file as written — what the author's editor shows. The loader
 * (jiti) runs a compiled form of the file: its lines are the file's, but its columns are not (types stripped, imports
 * rewritten, and on line 1 the wrapper jiti evaluates the code in), so `x.ts:1:214` was reported for column 24. The
 * file is compiled again as jiti compiles it, with a source map, only when an error names it (and kept while the file
 * is unchanged). `line` and `column` count from 1, in and out; a place the map cannot tell is returned as it came.
 */
export function sourcePosition(file: string, line: number, column: number): { line: number; column: number } {
  const map = sourceMapOf(file)
  if (!map) return { line, column }
  const generatedColumn = column - 1 - (line === 1 ? ASYNC_WRAPPER.length : 0)
  if (generatedColumn < 0) return { line, column }
  const entry = map.findEntry(line - 1, generatedColumn)
  // An entry of another line is the nearest mapping before this place, not this place.
  if (!('originalLine' in entry) || entry.generatedLine !== line - 1) return { line, column }
  return { line: entry.originalLine + 1, column: entry.originalColumn + 1 }
}

function sourceMapOf(file: string): SourceMap | undefined {
  let stat
  try {
    stat = statSync(file)
  } catch {
    return undefined
  }
  const known = maps.get(file)
  if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known.map
  const map = compiledMap(file)
  if (maps.size >= KEPT) maps.delete(maps.keys().next().value!)
  maps.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, map })
  return map
}

const INLINE_MAP = /\/\/# sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,([A-Za-z0-9+/=]+)\s*$/

/** The file compiled as the loader compiles it (src/recipes/loader.ts), with its source map; undefined if it does not compile. */
function compiledMap(file: string): SourceMap | undefined {
  try {
    // jiti's CommonJS build, loaded here synchronously: errors are described where no await is possible.
    const { createJiti } = createRequire(import.meta.url)('jiti') as typeof import('jiti')
    const jiti = createJiti(file, { fsCache: false, moduleCache: false, interopDefault: false, sourceMaps: true })
    const code = jiti.transform({ filename: file, source: readFileSync(file, 'utf8'), ts: /\.[cm]?tsx?$/.test(file), async: true })
    const inline = INLINE_MAP.exec(code)
    return inline ? new SourceMap(JSON.parse(Buffer.from(inline[1]!, 'base64').toString('utf8')) as ConstructorParameters<typeof SourceMap>[0]) : undefined
  } catch {
    return undefined
  }
}
