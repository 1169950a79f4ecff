/**
 * `npm run bench [-- name…]` (e.g. `-- pipeline` for the whole service under a burst): runs each test/bench/*.bench.ts in its own process, one after another
 * (two cores: running them together would measure contention). Each prints its own figures as ratios
 * against a baseline it measures in the same run.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const dir = dirname(fileURLToPath(import.meta.url))
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
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: 'silent' } })
  if (result.status !== 0) failed++
}
if (failed) {
  console.error(`\n${failed} benchmark(s) missed a budget or failed`)
  process.exit(1)
}
