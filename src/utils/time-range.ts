/** The largest epoch milliseconds a Date holds (±8.64e15, about ±275,760 years): past it a time is no instant at all. */
export const MAX_DATE_MS = 8.64e15

/**
 * The times switchboard keeps and takes as instants: the years 1 to 9999. Date goes further, but the last instants it
 * holds have no ISO text in a zone east of UTC (their local time is past its range: "Invalid time value"), and a
 * conversation started there made that day's report fail to build.
 */
export const EARLIEST_KEPT_MS = Date.parse('0001-01-01T00:00:00Z')
export const LATEST_KEPT_MS = Date.parse('9999-12-31T23:59:59.999Z')
