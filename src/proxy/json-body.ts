import { firstInvalidUtf8 } from '../utils/utf8.ts'
import { MAX_JSON_DEPTH, jsonNestedDeeperThan } from '../utils/json-depth.ts'

export type JsonBody = { ok: true; value: unknown } | { ok: false; message: string }

/** Stands in for the first invalid byte while parsing, to find which field holds it. Private-use, so JSON keeps it. */
const MARK = '\uE000switchboard-invalid-utf8\uE000'

/** `parameters[0].value`-style path of the first string (key or value) containing the mark. */
function pathOfMark(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes(MARK) ? path : undefined
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = pathOfMark(item, `${path}[${i}]`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes(MARK)) return path ? `a field name in ${path}` : 'a field name'
      const found = pathOfMark(item, path ? `${path}.${key}` : key)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/**
 * Reads a JSON request body as the provider requires it: UTF-8. Decoding with replacement characters
 * would place a call to a garbled name or number, so a body with invalid bytes is refused, naming the
 * field that holds them (or the body, when they sit outside any string).
 */
export function parseJsonBody(bytes: Uint8Array): JsonBody {
  const bad = firstInvalidUtf8(bytes)
  const decoder = new TextDecoder('utf-8', { ignoreBOM: false })
  if (bad >= 0) {
    const where = `invalid byte 0x${bytes[bad]!.toString(16).padStart(2, '0')} at offset ${bad}`
    const before = decoder.decode(bytes.subarray(0, bad))
    // The prefix is valid, so its length is the index of the first replacement character in the lossy text.
    const lossy = decoder.decode(bytes)
    let field: string | undefined
    const marked = before + MARK + lossy.slice(before.length + 1)
    try {
      field = jsonNestedDeeperThan(marked) ? undefined : pathOfMark(JSON.parse(marked), '')
    } catch {
      field = undefined
    }
    return { ok: false, message: field ? `${field} is not valid UTF-8 (${where})` : `request body is not valid UTF-8 (${where})` }
  }
  const text = decoder.decode(bytes)
  if (!text.trim()) return { ok: false, message: 'request body must be a JSON object' }
  if (jsonNestedDeeperThan(text)) return { ok: false, message: `request body is nested deeper than ${MAX_JSON_DEPTH} levels` }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    return { ok: false, message: `request body is not valid JSON: ${(error as Error).message}` }
  }
}
