/**
 * Start-up to ready: `switchboard serve` (fresh DATA_DIR, so migrations run) until /readyz answers 200,
 * against a bare h3 server started the same way (node + tsx loader) until it answers. Budget: ≤ 3 s.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../helpers/free-port.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const RUNS = 5
const BUDGET_MS = 3000

async function timeToReady(args: string[], env: Record<string, string>, url: string): Promise<number> {
  const started = performance.now()
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, SWITCHBOARD_CONFIG: 'none', ...env }, stdio: 'ignore' })
  try {
    for (;;) {
      if (performance.now() - started > 30_000) throw new Error(`${url} not ready after 30 s`)
      try {
        const res = await fetch(url)
        if (res.status === 200) return performance.now() - started
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 10))
    }
  } finally {
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const bareDir = mkdtempSync(join(tmpdir(), 'sb-bench-bare-'))
const bareFile = join(bareDir, 'bare.ts')
writeFileSync(bareFile, `import { H3, serve } from '${join(root, 'node_modules/h3/dist/_entries/node.mjs')}'\nconst app = new H3().get('/', () => 'ok')\nserve(app, { port: Number(process.env.PORT), hostname: '127.0.0.1', silent: true })\n`)

const bare: number[] = []
const service: number[] = []
for (let i = 0; i < RUNS; i++) {
  const p1 = await freePort()
  bare.push(await timeToReady(['--import', 'tsx', bareFile], { PORT: String(p1) }, `http://127.0.0.1:${p1}/`))
  const dataDir = mkdtempSync(join(tmpdir(), 'sb-bench-start-'))
  const p2 = await freePort()
  service.push(await timeToReady(['src/bin.mjs', 'serve'], { PORT: String(p2), DATA_DIR: dataDir, LOG_LEVEL: 'silent' }, `http://127.0.0.1:${p2}/readyz`))
  rmSync(dataDir, { recursive: true, force: true })
}
rmSync(bareDir, { recursive: true, force: true })

const s = median(service)
const b = median(bare)
console.log(`bare h3 (tsx) start to answer   median ${b.toFixed(0)} ms`)
console.log(`switchboard serve to /readyz    median ${s.toFixed(0)} ms   (${(s / b).toFixed(2)}× bare; budget ${BUDGET_MS} ms)`)
if (s > BUDGET_MS) {
  console.log('MISSED: start-up budget')
  process.exit(1)
}
console.log('ok: within budget')
