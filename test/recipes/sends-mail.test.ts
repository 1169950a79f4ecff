import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { recipeSendsMail } from '../../src/recipes/sends-mail.ts'
import { tempRecipesDir } from './helpers.ts'
import { SHIPPED_RECIPES_DIR } from '../helpers/recipes.ts'

// Single files by name: a recipe the team added to the folder is never read here.
const SHIPPED = SHIPPED_RECIPES_DIR
let folder: ReturnType<typeof tempRecipesDir> | undefined
afterEach(() => folder?.cleanup())

it('a recipe mails when its source sends the daily report or a message, whatever its name (SMTP readiness, doctor)', () => {
  folder = tempRecipesDir()
  const recipe = (body: string) => `import { defineRecipe } from 'switchboard'\nexport default defineRecipe({ description: 'x', schedule: '0 8 * * *', async run(ctx) { ${body} } })\n`
  expect(recipeSendsMail(folder.write('weekly-summary', recipe(`await ctx.mail.send({ to: 'ops@example.com', subject: 's', text: 't' })`)))).toBe(true)
  expect(recipeSendsMail(folder.write('digest', recipe(`const { mail } = ctx\n  await mail.send({ to: 'a@example.com', subject: 's', text: 't' })`)))).toBe(true)
  expect(recipeSendsMail(folder.write('morning', recipe(`await ctx.reports.sendDailyReport({ to: ['a@example.com'] })`)))).toBe(true)
  // Named for a report, but only builds the figures: no relay needed.
  expect(recipeSendsMail(folder.write('report-archive', recipe(`return ctx.reports.buildDailyReport({ date: '2026-01-01' })`)))).toBe(false)
  expect(recipeSendsMail(join(folder.dir, 'missing.ts'))).toBe(false)
  expect(['daily-report', 'nightly-batch', 'no-answer-followup'].map((n) => recipeSendsMail(join(SHIPPED, `${n}.ts`)))).toEqual([true, false, false])
})
