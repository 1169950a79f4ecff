import { HTTPError, type H3Event } from 'h3'

/** An admin route's optional JSON object body: `{}` when empty; a 400 showing `shape` when it is not an object. */
export async function readAdminJsonObject(event: H3Event, shape: string): Promise<Record<string, unknown>> {
  const text = await event.req.text()
  if (!text.trim()) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new HTTPError({ status: 400, message: `body must be a JSON object: ${shape}` })
  return parsed as Record<string, unknown>
}
