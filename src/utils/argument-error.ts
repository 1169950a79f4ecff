import type { z } from 'zod'
import { unknownKey } from './did-you-mean.ts'

/**
 * A recipe passed a helper the wrong thing. The message names the function, the argument (with the path
 * inside it) and the expected shape, so the mistake is found from the message alone — not from a driver
 * error deep inside a query.
 */
export class ArgumentError extends Error {
  override readonly name = 'ArgumentError'
}

/** Where a value was passed, for the message: `ctx.data.conversation(conversationId)`. */
export interface ArgumentSite {
  /** The function as a recipe writes it, e.g. `ctx.data.conversation`. */
  fn: string
  /** The parameter's name, e.g. `conversationId`. */
  arg: string
  /** The expected shape in words, e.g. `a conversation id (string)`. */
  expected: string
  /** An extra hint for a likely mix-up, e.g. "did you mean ctx.data.conversations(query)?". */
  hint?: (value: unknown) => string | undefined
  /** The keys the argument's objects may have: an unknown one is named with the nearest of them. */
  knownKeys?: readonly string[]
}

/** A short rendering of what was passed. */
export function preview(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (typeof value === 'function') return 'a function'
  try {
    const text = JSON.stringify(value, (_k, v: unknown) => (v instanceof Date ? v.toISOString() : v))
    return text.length > 120 ? `${text.slice(0, 119)}…` : text
  } catch {
    return String(value)
  }
}

function pathOf(arg: string, path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : `${out}.${String(key)}`), arg)
}

/** Parses one argument with its schema, or throws an ArgumentError naming it. */
export function checkArgument<S extends z.ZodType>(schema: S, value: unknown, site: ArgumentSite): z.output<S> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const problems = result.error.issues.slice(0, 3).map((issue) => {
    if (issue.code === 'unrecognized_keys' && site.knownKeys) return `${pathOf(site.arg, issue.path)}: ${unknownKey(issue.keys[0]!, site.knownKeys)}`
    return `${pathOf(site.arg, issue.path)}: ${issue.message}`
  })
  const hint = site.hint?.(value)
  throw new ArgumentError(
    `${site.fn}(${site.arg}): ${problems.join('; ')} — expected ${site.expected}, got ${preview(value)}${hint ? `. ${hint}` : ''}`,
  )
}
