import { HTTPError, type H3Event } from 'h3'
import { didYouMean } from './did-you-mean.ts'
import { printable } from './printable.ts'

/**
 * An admin route's optional JSON object body, given the keys it reads and how each is written (`{ since: 'ISO' }`):
 * `{}` when empty; a 400 showing that shape when it is not an object, or when it holds a key the route does not read
 * — a misspelled `"sinse"` ignored would make the route act on everything.
 */
export async function readAdminJsonObject<K extends string>(event: H3Event, fields: Readonly<Record<K, string>>): Promise<Partial<Record<K, unknown>>> {
  const keys = Object.keys(fields) as K[]
  const shape = `{ ${keys.map((key) => `"${key}": ${fields[key]}`).join(', ')} }`
  const text = await event.req.text()
  if (!text.trim()) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new HTTPError({ status: 400, message: `body must be a JSON object: ${shape}` })
  const known: readonly string[] = keys
  const unknown = Object.keys(parsed).find((key) => !known.includes(key))
  if (unknown !== undefined) {
    const guess = didYouMean(unknown, keys)
    throw new HTTPError({ status: 400, message: `body has an unknown key "${printable(unknown, 60)}"${guess ? ` (did you mean "${guess}"?)` : ''}: ${shape}` })
  }
  return parsed as Partial<Record<K, unknown>>
}
