import { cutLists } from './cut-lists.ts'

/**
 * The most bytes of one log line, its newline included. Docker's logging drivers and Kubernetes' container runtimes
 * split a longer line into 16 KiB pieces, and a collector that reads one JSON object a line then drops or garbles
 * it; a line this long is also not read by anyone. What makes one this long is a value inside it — a recipe run's
 * summary listing every call it scheduled, an upstream error quoting a whole page, a stack.
 */
export const LOG_LINE_MAX_BYTES = 16 * 1024

/** Items a cut list keeps at first (and 40 × as many characters a string); halved until the line fits. */
const FIRST_KEPT = 100

/**
 * A log line (pino's JSON and its newline) over LOG_LINE_MAX_BYTES with its long lists and strings cut, as a run's
 * summary is (src/utils/cut-lists.ts: the first items, and `<key>_omitted` saying how many went), and a
 * `log_line_cut` field saying how long it was. One with too many fields to cut keeps its level, time and message.
 * Lines within the bound — all but a handful — pass as they are, after one length check.
 */
export function boundLogLine(line: string): string {
  // A UTF-16 code unit is at most three bytes of UTF-8 (a pair of them, four): most lines need no count of bytes.
  if (line.length * 3 <= LOG_LINE_MAX_BYTES) return line
  const bytes = Buffer.byteLength(line)
  if (bytes <= LOG_LINE_MAX_BYTES) return line
  let record: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(line)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return line
    record = parsed as Record<string, unknown>
  } catch {
    return line // not pino's JSON (a destination's own text): written as it is rather than lost
  }
  const note = `this line was ${bytes} bytes, over the ${LOG_LINE_MAX_BYTES} a log line is kept to: its long lists and texts are cut`
  const fits = (candidate: Record<string, unknown>) => {
    const text = `${JSON.stringify(candidate)}\n`
    return Buffer.byteLength(text) <= LOG_LINE_MAX_BYTES ? text : undefined
  }
  // Numbers pass through a cut as they are: the level and the time stay; the message is cut like any text.
  for (let items = FIRST_KEPT; items >= 1; items = Math.floor(items / 2)) {
    const text = fits({ ...(cutLists(record, items) as Record<string, unknown>), log_line_cut: note })
    if (text) return text
  }
  const msg = typeof record.msg === 'string' ? (cutLists(record.msg, 25) as string) : record.msg
  return fits({ level: record.level, time: record.time, msg, log_line_cut: note }) ?? `${JSON.stringify({ level: record.level, time: record.time, log_line_cut: note })}\n`
}
