#!/usr/bin/env node
// The package's executable. It runs the CLI from a bundle of the TypeScript sources, built on first use
// (src/bundle.mjs); where no bundle can be had, or with SWITCHBOARD_BUNDLE=0, it registers tsx's loader so
// the sources run as they are (Node 20 has no type stripping).
import { nodeTooOld } from './node-version.mjs'

const tooOld = nodeTooOld(process.versions.node)
if (tooOld) {
  process.stderr.write(`error: ${tooOld}\n`)
  process.exit(1)
}
const { bundledEntries } = await import('./bundle.mjs')
const bundle = process.env.SWITCHBOARD_BUNDLE === '0' ? undefined : await bundledEntries()
let cli
if (bundle) {
  // Stack traces name the sources, not the bundle.
  process.setSourceMapsEnabled(true)
  // The processing thread (src/worker-thread.mjs) starts from the same bundle.
  process.env.SWITCHBOARD_PROCESSING_ENTRY = bundle['processing-thread']
  cli = await import(bundle.cli)
} else {
  // Not a bundle this process inherited from the one that started it.
  delete process.env.SWITCHBOARD_PROCESSING_ENTRY
  const { register } = await import('tsx/esm/api')
  register()
  cli = await import('./cli.ts')
}
process.exitCode = await cli.main(process.argv.slice(2), { watchRecipeCode: true })
// The command is over. What a recipe (or anything else) left behind — an interval, a socket — must not hold the process
// open after its last line: a second for the output (and async log lines) to drain, then it ends, with the command's code.
setTimeout(() => process.exit(), 1_000).unref()
