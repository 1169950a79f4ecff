// Plain JavaScript: this runs before any TypeScript loader is registered.
import { createHash, randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/**
 * switchboard runs from its TypeScript sources. Loading them one module at a time through tsx's loader
 * costs about a second of CPU per start — every CLI command, `serve`, and `serve`'s processing thread —
 * while the same sources as one esbuild bundle load in about a third of that. So the executable bundles
 * `src/` on first use (~0.2 s) into `node_modules/.cache/switchboard/<fingerprint>/` and runs the bundle;
 * an edited source changes the fingerprint and the next start bundles again. Nothing of it is committed
 * or needed: when esbuild is missing or the folder is not writable, the sources run through tsx as before
 * (and `SWITCHBOARD_BUNDLE=0` asks for that).
 *
 * Each module keeps its own `import.meta.url` (a plugin writes it in as a literal), so files found next to
 * a module — dashboard assets, recipe templates, worker entries, `src/index.ts` for recipes — are found
 * where they are. npm packages stay outside the bundle and resolve from `node_modules` as usual.
 */

const SRC = dirname(fileURLToPath(import.meta.url))
/** Changes whenever the way the bundle is built changes. */
const FORMAT = 3
/** The bundle's entry points, by output name. */
const ENTRIES = { cli: 'cli.ts', 'processing-thread': 'processing-thread.ts' }
/**
 * npm packages bundled in with the sources rather than loaded from node_modules at run time: each is many small
 * modules that Node 20 resolves and compiles one by one (kysely alone ~230 ms a start, one file ~30 ms), and none of
 * them is native, loads files beside itself or hands out objects whose identity another copy would have to share.
 * Everything else stays external: native addons (better-sqlite3, pg's optional one), TypeScript and the loaders
 * (tsx, jiti, esbuild), pino (its transports load files by path), and zod, whose schemas recipes may extend with
 * their own `import { z } from 'zod'`.
 */
const BUNDLED = new Set([
  'h3', 'srvx', 'rou3', 'cookie-es', 'crossws', 'kysely', 'prom-client', 'tdigest', 'bintrees', 'libphonenumber-js', 'nodemailer',
  'undici', 'ofetch', 'destr', 'ufo', 'node-fetch-native', 'croner', 'csv-parse', 'csv-stringify', 'countries-and-timezones',
  // prom-client's CPU metric requires it (for exemplars): ~40 small CommonJS files, ~25 ms of every start loaded one by one.
  '@opentelemetry/api',
])

/** The package a bare import specifier names (`@scope/name` or `name`), or undefined for a path. */
function packageOf(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

/** Marks every package import external except those in BUNDLED (and their own imports of each other). */
function externalExcept(bundled = BUNDLED) {
  return {
    name: 'external-except',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const pkg = packageOf(args.path)
        if (pkg === undefined || bundled.has(pkg)) return undefined
        return { path: args.path, external: true }
      })
    },
  }
}

/**
 * The esbuild settings every bundle of switchboard's code is built with — the service's, and the benchmarks' (which
 * measure the code as it ships): ESM for Node 20, the packages in BUNDLED inside, each source module (those `include`
 * accepts) with its own `import.meta.url`.
 */
export function bundleSettings(include) {
  return {
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The bundled CommonJS packages (undici, nodemailer, prom-client) call require() for Node's built-ins.
    banner: { js: "import { createRequire as __switchboardRequire } from 'node:module'; const require = __switchboardRequire(import.meta.url);" },
    plugins: [externalExcept(), ownModuleUrls(include)],
  }
}

/** Bundles of other fingerprints are removed once this old (a long-running process may still load chunks from its own). */
const STALE_MS = 7 * 24 * 3600_000

/** Where bundles are kept: inside node_modules, so `npm ci` starts afresh and git never sees them. */
export function defaultCacheDir(srcDir = SRC) {
  return resolve(srcDir, '../node_modules/.cache/switchboard')
}

function sourceFiles(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) sourceFiles(path, out)
    else if (entry.name.endsWith('.ts')) out.push(path)
  }
  return out
}

/**
 * Names the sources as they are now: where they are (the bundle points back at them), each file's path, size
 * and modification time, and esbuild's version.
 */
export function fingerprint(srcDir, esbuildVersion) {
  const hash = createHash('sha256').update(`${FORMAT}\0${esbuildVersion}\0${resolve(srcDir)}\0`)
  for (const file of sourceFiles(srcDir).sort()) {
    const stat = statSync(file)
    hash.update(`${relative(srcDir, file)}\0${stat.size}\0${stat.mtimeMs}\0`)
  }
  return hash.digest('hex').slice(0, 20)
}

/**
 * An esbuild plugin that gives each TypeScript module `include(path)` accepts its own file's URL for
 * `import.meta.url` (and `dirname`/`filename`), as it has when run from source. The benchmarks use it too.
 */
export function ownModuleUrls(include) {
  return {
    name: 'own-module-urls',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!include(args.path)) return undefined
        const contents = readFileSync(args.path, 'utf8')
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(dirname(args.path)))
          .replaceAll('import.meta.filename', JSON.stringify(args.path))
        return { contents, loader: 'ts' }
      })
    },
  }
}

function removeStale(cacheDir, keep, now) {
  for (const name of readdirSync(cacheDir)) {
    // Bundles only (a fingerprint, or one being built under it): the folder also holds the recipes' compiled forms
    // and type verdicts (src/utils/installation-cache.ts), which keep their own keys.
    if (name === keep || !/^[0-9a-f]{20}(\.|$)/.test(name)) continue
    const path = join(cacheDir, name)
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true })
    } catch {
      // Another process removed it first.
    }
  }
}

/**
 * The bundle of the current sources, built first if there is none: file URLs of its entry points, or
 * undefined when it cannot be had (the caller then runs the sources through tsx). Never throws.
 */
export async function bundledEntries({ srcDir = SRC, cacheDir = defaultCacheDir(srcDir) } = {}) {
  try {
    // The version from its package.json: importing esbuild itself (~20 ms) waits until there is something to build.
    const require = createRequire(import.meta.url)
    const version = JSON.parse(readFileSync(require.resolve('esbuild/package.json'), 'utf8')).version
    const dir = join(cacheDir, fingerprint(srcDir, version))
    const entries = () => Object.fromEntries(Object.keys(ENTRIES).map((name) => [name, pathToFileURL(join(dir, `${name}.js`)).href]))
    if (existsSync(join(dir, 'complete'))) return entries()
    const esbuild = await import('esbuild')
    mkdirSync(cacheDir, { recursive: true })
    // Built aside and renamed into place: a process starting meanwhile never sees half a bundle, and of two
    // building at once (two CLI commands, two test workers) the first rename wins and the other is dropped.
    const building = `${dir}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`
    await esbuild.build({
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, join(srcDir, file)])),
      outdir: building,
      ...bundleSettings((path) => !relative(srcDir, path).startsWith('..')),
      splitting: true,
      sourcemap: 'linked',
      sourcesContent: false,
      logLevel: 'silent',
    })
    writeFileSync(join(building, 'complete'), '')
    try {
      renameSync(building, dir)
    } catch (error) {
      rmSync(building, { recursive: true, force: true })
      if (!existsSync(join(dir, 'complete'))) throw error
    }
    removeStale(cacheDir, dir.slice(cacheDir.length + 1), Date.now())
    return entries()
  } catch {
    return undefined
  }
}
