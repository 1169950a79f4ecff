import type { CliCommand } from './cli-kit.ts'
import { wrapText, wrapUsage } from './utils/wrap-text.ts'

/** The command with its arguments, as help shows it: "events replay <id> [--wait SECONDS] [--json]". */
export function usageOf(command: CliCommand): string {
  return command.name + (command.usage ? ` ${command.usage}` : '')
}

/**
 * Rows of a name and its description: two columns (the description wrapped beside the name) when the longest
 * name leaves the description room, else each description on the lines under its name. A blank line goes
 * between rows whose `groups` differ.
 */
function columns(rows: Array<[string, string]>, width: number, groups?: string[]): string[] {
  const left = Math.max(...rows.map(([name]) => name.length)) + 4
  const stacked = left > width * 0.45
  return rows.flatMap(([name, text], i) => [
    ...(groups && i > 0 && groups[i] !== groups[i - 1] ? [''] : []),
    ...(stacked ? [`  ${name}`, ...wrapText(text, width, '      ')] : wrapText(text, width, ' '.repeat(left), `  ${name.padEnd(left - 2)}`)),
  ])
}

/** Commands listed by name, a group (the first word: events, recipes, …) per paragraph. */
export function commandList(commands: CliCommand[], width: number): string[] {
  return columns(commands.map((c) => [c.name, c.summary]), width, commands.map((c) => c.name.split(' ')[0]!))
}

/** A group's commands ("events --help"): each with its usage, the summary under it. */
export function groupList(commands: CliCommand[], width: number): string[] {
  return commands.flatMap((c, i) => [...(i > 0 ? [''] : []), ...wrapUsage(usageOf(c), width, '    ', '  '), ...wrapText(c.summary, width, '      ')])
}

/** `<command> --help`: usage, what it does, its arguments and options, examples. */
export function commandHelp(cli: string, command: CliCommand, width: number): string {
  const lines = [...wrapUsage(`usage: ${cli} ${usageOf(command)}`, width, '         '), '', ...wrapText(command.summary, width)]
  if (command.args?.length) lines.push('', 'arguments:', ...columns(command.args, width))
  const options: Array<[string, string]> = Object.entries(command.options ?? {}).map(([name, o]) => [
    `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`,
    o.help,
  ])
  options.push(['-h, --help', 'show this help'])
  lines.push('', 'options:', ...columns(options, width))
  if (command.examples?.length) lines.push('', 'examples:', ...command.examples.map((e) => `  ${cli} ${e}`))
  return lines.join('\n') + '\n'
}
