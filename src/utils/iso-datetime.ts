/**
 * An ISO 8601 date-time with its time zone (`Z` or an offset): what the provider takes for `scheduled_for`. A time
 * without one is refused rather than read: `Date.parse` would read it in the server's own zone (TZ), so the same
 * recipe called people at different hours on different machines.
 */
const ISO_DATETIME_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i

/** True for an ISO 8601 date-time with a time zone that names a real instant. */
export function isZonedIsoDateTime(text: string): boolean {
  return ISO_DATETIME_WITH_ZONE.test(text) && Number.isFinite(Date.parse(text))
}
