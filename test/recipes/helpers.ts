import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A recipes folder outside the repository: `switchboard` must still resolve to the running service. */
export function tempRecipesDir(): { dir: string; write(name: string, source: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-recipes-'))
  return {
    dir,
    write(name, source) {
      const file = join(dir, `${name}.ts`)
      writeFileSync(file, source)
      return file
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** A recipe that returns its trigger and clock time, so tests can read when it ran from the run records. */
export function tickRecipe(options: { schedule: string; timezone?: string; description?: string }): string {
  return `import { defineRecipe } from 'switchboard'
export default defineRecipe({
  description: ${JSON.stringify(options.description ?? 'records its ticks')},
  schedule: ${JSON.stringify(options.schedule)},
  ${options.timezone ? `timezone: ${JSON.stringify(options.timezone)},` : ''}
  run(ctx) {
    return { at: ctx.trigger.scheduledAt ? new Date(ctx.trigger.scheduledAt).toISOString() : null, now: ctx.now.toISOString(), tz: ctx.timezone }
  },
})
`
}
