import type { z } from 'zod'

interface Def {
  type: string
  shape?: Record<string, z.ZodType>
  valueType?: z.ZodType
  innerType?: z.ZodType
  in?: z.ZodType
  out?: z.ZodType
  options?: z.ZodType[]
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def

/** The object schemas a value at `path` may be checked against (unwrapping defaults, pipes, unions, records). */
function objectsAt(schema: z.ZodType, path: readonly PropertyKey[]): Def[] {
  const def = defOf(schema)
  switch (def.type) {
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return objectsAt(def.innerType!, path)
    case 'pipe':
      return [...objectsAt(def.in!, path), ...objectsAt(def.out!, path)]
    case 'union':
      return def.options!.flatMap((o) => objectsAt(o, path))
    case 'record':
      return path.length === 0 ? [] : objectsAt(def.valueType!, path.slice(1))
    case 'object': {
      if (path.length === 0) return [def]
      const next = def.shape![String(path[0])]
      return next ? objectsAt(next, path.slice(1)) : []
    }
    default:
      return []
  }
}

/**
 * The keys an object at `path` inside `schema` may have, read from the schema itself, so a "did you
 * mean" stays right as settings are added.
 */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  return [...new Set(objectsAt(schema, path).flatMap((def) => Object.keys(def.shape ?? {})))]
}
