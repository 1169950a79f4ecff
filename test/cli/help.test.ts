import { describe, expect, it } from 'vitest'
import { COMMAND_MODULES, loadCommands, main } from '../../src/cli.ts'
import { wrapText, wrapUsage } from '../../src/utils/wrap-text.ts'
import { packagesLoadedBy } from '../helpers/packages-loaded.ts'

async function run(argv: string[], columns?: number) {
  let stdout = ''
  let stderr = ''
  const code = await main(argv, { env: {}, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), ...(columns ? { columns } : {}) })
  return { code, stdout, stderr }
}

const longest = (text: string, skip: (line: string) => boolean = () => false) =>
  Math.max(...text.split('\n').filter((l) => !skip(l)).map((l) => l.length))

const commands = await loadCommands()

describe('help text', () => {
  it('the command list fits an 80-column terminal and names every command with its summary', async () => {
    const { code, stdout } = await run(['help'])
    expect(code).toBe(0)
    expect(longest(stdout)).toBeLessThanOrEqual(80)
    for (const c of commands) expect(stdout, c.name).toMatch(new RegExp(`^  ${c.name} +\\S`, 'm'))
    // Summaries are wrapped, not cut: every word of each is there.
    const words = stdout.split(/\s+/)
    for (const c of commands) for (const w of c.summary.split(/\s+/)) expect(words, `${c.name}: ${w}`).toContain(w)
  })

  it('lays out for the terminal it is given (within 60–100 columns)', async () => {
    const narrow = await run(['help'], 40)
    // A word longer than the room beside the names (followup|batch|report|webhook-forward) gets a line of its own.
    expect(longest(narrow.stdout, (l) => !/\S\s+\S/.test(l.trim()))).toBeLessThanOrEqual(60)
    const wide = await run(['help'], 200)
    expect(longest(wide.stdout)).toBeLessThanOrEqual(100)
    expect(longest(wide.stdout)).toBeGreaterThan(80)
  })

  it('"<command> --help" explains every argument and option, and fits 80 columns but for its examples', async () => {
    for (const c of commands) {
      const { code, stdout, stderr } = await run([...c.name.split(' '), '--help'])
      expect(code, c.name).toBe(0)
      expect(stderr).toBe('')
      expect(stdout, c.name).toMatch(new RegExp(`^usage: switchboard ${c.name}`))
      expect(longest(stdout, (l) => l.startsWith('  switchboard ')), c.name).toBeLessThanOrEqual(80)
      const flat = stdout.replace(/\s+/g, ' ')
      for (const [arg, text] of c.args ?? []) expect(flat, `${c.name} ${arg}`).toContain(`${arg} ${text.replace(/\s+/g, ' ')}`)
      for (const [name, o] of Object.entries(c.options ?? {})) {
        expect(o.help.length, `${c.name} --${name} has a description`).toBeGreaterThan(10)
        expect(flat, `${c.name} --${name}`).toContain(`--${name}${o.type === 'string' ? ` ${o.value}` : ''} ${o.help.replace(/\s+/g, ' ')}`)
      }
      expect(flat).toContain('-h, --help show this help')
      for (const e of c.examples ?? []) expect(stdout).toContain(`  switchboard ${e}\n`)
    }
  })

  // The topic was ignored: each printed the whole list, exit 0 — an unknown one too.
  it('"help <command>" is that command\'s help; an unknown one is a mistake, exit 2', async () => {
    expect(await run(['help', 'recipes', 'run'])).toEqual(await run(['recipes', 'run', '--help']))
    const group = await run(['help', 'events'])
    expect([group.code, group.stdout]).toEqual([0, (await run(['events', '--help'])).stdout])
    const unknown = await run(['help', 'evnts'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(/^error: .*did you mean "events/)
  })

  it('a string option names its value in help (SECONDS, NAME, …)', () => {
    for (const c of commands) {
      for (const [name, o] of Object.entries(c.options ?? {})) if (o.type === 'string') expect(o.value, `${c.name} --${name}`).toMatch(/\S/)
    }
  })
})

describe('the command table', () => {
  // A command runs after only its own module is imported (src/cli.ts → COMMAND_MODULES): the table's first words must
  // be exactly those of the commands each module defines, or a command would be found only by `help`.
  it('names each module by the first words of its commands, and no word twice', async () => {
    for (const m of COMMAND_MODULES) {
      const words = [...new Set((await m.load()).map((c) => c.name.split(' ')[0]!))].sort()
      expect(words, m.words.join(', ')).toEqual([...m.words].sort())
    }
    const all = COMMAND_MODULES.flatMap((m) => m.words)
    expect(new Set(all).size).toBe(all.length)
  })

  it('runs a command with only its own module loaded: events list does not load the server (its dashboard\'s assets)', () => {
    // A child process: this one has loaded every module for the tests above.
    const loaded = packagesLoadedBy(["const { main } = await import('./src/cli.ts')", "await main(['events', 'list', '--help'], { env: {}, stdout: () => {}, stderr: () => {} })"])
    expect(loaded).toContain('better-sqlite3')
    expect(loaded.filter((name) => ['htmx.org', 'uplot', '@picocss/pico'].includes(name))).toEqual([])
  })
})

describe('wrapText / wrapUsage', () => {
  it('wraps at word boundaries within the width, indenting the lines after the first', () => {
    const lines = wrapText('one two three four five six seven eight nine ten', 20, '    ', '- ')
    expect(lines).toEqual(['- one two three four', '    five six seven', '    eight nine ten'])
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(20)
  })

  it('puts a word longer than the line on a line of its own rather than cutting it', () => {
    expect(wrapText('see https://example.com/a/very/long/path/indeed for more', 20)).toEqual(['see', 'https://example.com/a/very/long/path/indeed', 'for more'])
  })

  it('keeps line breaks and never leaves trailing spaces', () => {
    expect(wrapText('a b\nc', 10, '  ', '')).toEqual(['a b', '  c'])
    expect(wrapText('', 10, '  ')).toEqual([''])
  })

  it('never breaks inside a usage\'s [option value] or <argument>', () => {
    const lines = wrapUsage('recipes test <recipe name> [--events file.json] [--csv file.csv] [--now ISO]', 41, '    ')
    expect(lines).toEqual(['recipes test <recipe name>', '    [--events file.json] [--csv file.csv]', '    [--now ISO]'])
  })
})

describe('mail list --limit', () => {
  it('is bounded like every listing\'s (a negative LIMIT means "all" to SQLite and fails on Postgres)', async () => {
    for (const bad of ['0', '-5', '10001']) {
      const r = await run(['mail', 'list', `--limit=${bad}`])
      expect(r.code, bad).toBe(2)
      expect(r.stderr).toMatch(/^error: --limit must be from 1 to 10000/)
    }
  })
})
