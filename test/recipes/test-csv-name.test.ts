import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { main } from '../../src/cli.ts'
import { testRecipe } from '../../src/index.ts'
import { ArgumentError } from '../../src/utils/argument-error.ts'
import { shippedRecipesDir } from '../helpers/recipes.ts'

/**
 * `recipes test <batch recipe> --csv leads.txt` planned nothing, exit 0: the file was copied into the test's inbox under
 * its own name, and a batch recipe reads only the inbox's *.csv files (the shipped nightly-batch put a warning in its
 * log; one made from the batch template said nothing at all). The service does the same with a leads.txt dropped in
 * its inbox, so the test refuses the name — one line naming the file and what it expects, exit 2 — rather than plan
 * what the service would never read.
 */
const SAMPLES = resolve(import.meta.dirname, '../../data/samples')
const shipped = shippedRecipesDir('nightly-batch')
let dir: string
const env = { RECIPES_DIR: shipped.dir, LOG_LEVEL: 'silent', VOICE_API_KEY: 'sk_test_acme', VOICE_API_BASE_URL: 'http://127.0.0.1:9', WEBHOOK_SECRET: 'whsec_x', DEFAULT_COUNTRY: 'IN', RECIPES_TIMEZONE: 'Asia/Kolkata', SWITCHBOARD_CONFIG: 'none' }

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-csv-name-'))
})
afterAll(() => {
  shipped.cleanup()
  rmSync(dir, { recursive: true, force: true })
})

async function cli(...argv: string[]) {
  let out = ''
  let err = ''
  const code = await main(argv, { env, stdout: (t) => void (out += t), stderr: (t) => void (err += t) })
  return { code, out, err }
}

it('refuses a contacts file not named .csv with one line naming it and the name it expects, exit 2 — for the shipped batch recipe and the template\'s', async () => {
  const txt = join(dir, 'leads.txt')
  copyFileSync(join(SAMPLES, 'leads.csv'), txt)
  const refusal = `error: --csv: ${txt} is not named *.csv: a batch recipe reads only the .csv files of its inbox (as it does in the service), so it would plan nothing; rename it ${join(dir, 'leads.csv')}\n`
  expect(await cli('recipes', 'test', 'nightly-batch', '--csv', txt, '--now', '2026-01-15T04:00:00Z')).toEqual({ code: 2, out: '', err: refusal })
  expect((await cli('recipes', 'new', 'my-batch', '--from', 'batch')).code).toBe(0)
  expect(await cli('recipes', 'test', 'my-batch', '--csv', txt, '--now', '2026-01-15T04:00:00Z')).toEqual({ code: 2, out: '', err: refusal })
  // testRecipe() refuses it too, naming its own option.
  const thrown = await testRecipe({ recipe: 'nightly-batch', recipesDir: shipped.dir, csv: txt, env }).catch((error: unknown) => error)
  expect(thrown).toBeInstanceOf(ArgumentError)
  expect((thrown as Error).message).toMatch(/^testRecipe\(csv\): .*leads\.txt is not named \*\.csv/)
}, 120_000)

it('takes a .CSV in capitals, as the batch recipes do, and plans its batch', async () => {
  const upper = join(dir, 'LEADS.CSV')
  copyFileSync(join(SAMPLES, 'leads.csv'), upper)
  const { code, out, err } = await cli('recipes', 'test', 'nightly-batch', '--csv', upper, '--now', '2026-01-15T04:00:00Z')
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out).toMatch(/batch "LEADS-2026-01-15" for agent 101: \d+ rows?/)
}, 120_000)

it('a file that is not there, or a folder, is refused before the recipe is loaded: one line, exit 2', async () => {
  const missing = join(dir, 'nope.csv')
  // A recipe name that is no recipe: the --csv mistake is said first, and alone.
  expect(await cli('recipes', 'test', 'no-such-recipe', '--csv', missing)).toEqual({ code: 2, out: '', err: `error: --csv: no file at ${missing}: expected a contacts CSV file\n` })
  expect(await cli('recipes', 'test', 'no-such-recipe', '--csv', dir)).toEqual({ code: 2, out: '', err: `error: --csv: ${dir} is a folder, not a CSV file\n` })
})

it('--watch refuses it at once, exit 2: no save of the file changes its name', async () => {
  const txt = join(dir, 'watched.txt')
  copyFileSync(join(SAMPLES, 'leads.csv'), txt)
  expect(await cli('recipes', 'test', 'nightly-batch', '--csv', txt, '--watch')).toEqual({ code: 2, out: '', err: expect.stringMatching(/^error: --csv: .*watched\.txt is not named \*\.csv: .*rename it .*watched\.csv\n$/) })
}, 20_000)
