import { afterAll, expect, it } from 'vitest'
import { loadRecipes } from '../../src/recipes/loader.ts'
import { validateRecipe } from '../../src/recipes/validate.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'

/**
 * What a recipe file exports is checked key by key: TypeScript's excess-property check covers only an object
 * literal written inside `defineRecipe(…)`, so `const def = { timeZone: … }; defineRecipe(def)` type-checks, and
 * a misspelled key would be ignored — a schedule run in RECIPES_TIMEZONE, a trigger that never fires. The
 * contract (DESIGN.md, RecipeDefinition) makes `description` required.
 */
const run = () => 'ok'
const reason = (value: unknown) => {
  try {
    validateRecipe(value, 'Asia/Kolkata')
    return 'accepted'
  } catch (error) {
    return (error as Error).message
  }
}

it('refuses an unknown key, naming it and the known key it most likely meant', () => {
  const known = '(a recipe takes description, schedule, timezone, on, run)'
  expect(reason({ description: 'd', schedule: '0 8 * * *', timeZone: 'Europe/London', run })).toBe(`unknown key \`timeZone\`: did you mean \`timezone\`? ${known}`)
  expect(reason({ description: 'd', cron: '0 8 * * *', run })).toBe(`unknown key \`cron\`: did you mean \`schedule\`? ${known}`)
  expect(reason({ description: 'd', events: ['call.no_answer'], run })).toBe(`unknown key \`events\`: did you mean \`on\`? ${known}`)
  expect(reason({ descripton: 'd', run })).toBe(`unknown key \`descripton\`: did you mean \`description\`? ${known}`)
  expect(reason({ description: 'd', time_zone: 'UTC', handler: run })).toBe(`unknown key \`time_zone\`: did you mean \`timezone\`?; unknown key \`handler\`: did you mean \`run\`? ${known}`)
  // Nothing close: no guess, the known keys.
  expect(reason({ description: 'd', retries: 3, run })).toBe(`unknown key \`retries\` ${known}`)
})

it('requires a description', () => {
  expect(reason({ schedule: '0 8 * * *', run })).toBe("`description` is required: a line saying what the recipe does, e.g. description: 'Calls back missed calls'")
  expect(reason({ description: '  ', run })).toBe('`description` must be a non-empty string')
  expect(reason({ description: 42, run })).toBe('`description` must be a non-empty string')
})

it('accepts every documented key', () => {
  const def = { description: 'all of them', schedule: '0 8 * * *', timezone: 'Europe/London', on: ['call.no_answer', 'crm:*'], run }
  expect(validateRecipe(def, 'Asia/Kolkata')).toBe(def)
  expect(reason({ description: 'only the required ones', run })).toBe('accepted')
})

const shipped = shippedRecipesDir('daily-report', 'nightly-batch', 'no-answer-followup')
afterAll(() => shipped.cleanup())

it('every shipped recipe still loads', async () => {
  const loaded = await loadRecipes(shipped.dir, 'Asia/Kolkata')
  expect(loaded.map((r) => [r.name, r.error ?? null])).toEqual([
    ['daily-report', null],
    ['nightly-batch', null],
    ['no-answer-followup', null],
  ])
})

it('refuses a subscription to a target WEBHOOK_TARGETS does not name, or to the provider\'s by target', () => {
  const targets = { crm: { scheme: 'standard' }, github: { scheme: 'hmac' }, eu: { scheme: 'formant' } }
  const check = (on: string[]) => {
    try {
      validateRecipe({ description: 'd', on, run }, 'UTC', targets)
      return 'accepted'
    } catch (error) {
      return (error as Error).message
    }
  }
  expect(check(['crm:contact.updated', 'github:*', 'call.no_answer'])).toBe('accepted')
  expect(check(['cmr:contact.updated'])).toBe('`on` lists "cmr:contact.updated", but no webhook target is named "cmr": did you mean "crm:contact.updated"? (WEBHOOK_TARGETS names "crm", "github")')
  expect(check(['shop:order.paid'])).toBe('`on` lists "shop:order.paid", but no webhook target is named "shop" (WEBHOOK_TARGETS names "crm", "github")')
  expect(check(['eu:call.no_answer'])).toBe('`on` lists "eu:call.no_answer", but target "eu" carries the provider\'s events: subscribe to them by type alone, e.g. \'call.no_answer\'')
  expect(check(['formant:call.no_answer'])).toMatch(/target "formant" carries the provider's events/)
  // With no targets configured, the message says so; without the configuration (testRecipe), the entry is not judged.
  expect(() => validateRecipe({ description: 'd', on: ['crm:x'], run }, 'UTC', {})).toThrow('(WEBHOOK_TARGETS names none)')
  expect(reason({ description: 'd', on: ['crm:x'], run })).toBe('accepted')
})
