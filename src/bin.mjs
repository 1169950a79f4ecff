#!/usr/bin/env node
// The package's executable: registers tsx's loader so the TypeScript sources run as they are
// (Node 20 has no type stripping), then hands over to the CLI.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('./cli.ts')
process.exitCode = await main(process.argv.slice(2))
