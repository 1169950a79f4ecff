/** JSON columns are text on both dialects. */
export function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value)
}

export function fromJson<T = unknown>(text: string | null | undefined): T | null {
  if (text === null || text === undefined || text === '') return null
  return JSON.parse(text) as T
}

/** `fromJson` for a column whose text may not parse (written by hand, or cut): null then, never a throw. */
export function fromJsonOrNull<T = unknown>(text: string | null | undefined): T | null {
  try {
    return fromJson<T>(text)
  } catch {
    return null
  }
}
