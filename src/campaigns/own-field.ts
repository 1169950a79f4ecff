/**
 * Sets `record[key]` as an own property, `__proto__` included: a plain assignment to `__proto__` sets the object's
 * prototype instead (a string is ignored), so a CSV column named `__proto__` lost its values without a word. The
 * record stays a plain object (a prototype-less one would break recipes that call its methods).
 */
export function setOwn(record: Record<string, string>, key: string, value: string): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
  else record[key] = value
}

/** `record[key]` if the record has it as its own: never an inherited `constructor` or `toString`. */
export function ownValue(record: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}
