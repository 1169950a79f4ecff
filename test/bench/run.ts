/**
 * `npm run bench [-- name…]` (e.g. `-- pipeline` for the whole service under a burst): runs each test/bench/*.bench.ts in its own process, one after another
 * (two cores: running them together would measure contention). Each prints its own figures as ratios
 * against a baseline it measures in the same run.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { bundleSettings } from '../../src/bundle.mjs'

const dir = dirname(fileURLToPath(import.meta.url))
const root = resolve(dir, '../..')

/**
 * Each benchmark runs as a bundle, as the service itself does (src/bundle.mjs): code loaded through tsx
 * carries esbuild's keepNames (every named function made at run time also defines its name), which the
 * shipped bundle does not. The bundle sits beside the benchmark, so the benchmark's own `import.meta.url`
 * (which it spawns itself with) names the bundle and finds its neighbours; every other module keeps its
 * own. BENCH_BUNDLE=0 runs the TypeScript files as they are.
 */
async function bundled(file: string): Promise<string> {
  const entry = join(dir, file)
  if (process.env.BENCH_BUNDLE === '0') return entry
  const outfile = join(dir, `.${file.replace(/\.ts$/, '')}.bundle.mjs`)
  const include = (path: string) => path !== entry && !relative(root, path).startsWith('..') && !path.includes('/node_modules/')
  await build({ entryPoints: [entry], outfile, ...bundleSettings(include), logLevel: 'warning' })
  return outfile
}
const wanted = process.argv.slice(2)
/** Long runs that only start when named (`npm run bench -- soak`). */
const ON_REQUEST = new Set(['soak.bench.ts'])
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => (wanted.length === 0 ? !ON_REQUEST.has(f) : wanted.some((w) => f.startsWith(w))))
  .sort()

if (benches.length === 0) {
  console.error(`no benchmark matches ${wanted.join(', ')}; available: ${readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).join(', ')}`)
  process.exit(2)
}

let failed = 0
for (const file of benches) {
  console.log(`\n━━ ${file.replace('.bench.ts', '')} ━━`)
  const script = await bundled(file)
  // tsx stays registered: worker threads and recipes started in-process load TypeScript at run time.
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: 'silent' } })
  if (script !== join(dir, file)) rmSync(script, { force: true })
  if (result.status !== 0) failed++
}
if (failed) {
  console.error(`\n${failed} benchmark(s) missed a budget or failed`)
  process.exit(1)
}
