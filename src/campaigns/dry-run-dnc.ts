import type { Effects } from '../effects.ts'

/**
 * What a dry run did to the do-not-call table — each number it added (`true`) or removed (`false`) — kept for the rest
 * of that run only, as ctx.state's overlay is: the real run's `isBlocked`, `loadDncList`, `scheduleCall`, `launchBatch`
 * and `prepareBatch` see its own `addToDnc` and `removeFromDnc`, and so must the dry run's, without writing the table.
 * The file (`$DATA_DIR/dnc.csv`) is never changed by either: a number it lists stays blocked after a removal.
 */
export type DncOverlay = ReadonlyMap<string, boolean>

const overlays = new WeakMap<Effects, Map<string, boolean>>()

/** The dry run's changes to the table so far; undefined for a real run or a dry run that made none. */
export function dncOverlayOf(effects: Effects | undefined): DncOverlay | undefined {
  return effects?.dryRun ? overlays.get(effects) : undefined
}

/** Records that this dry run added (`listed` true) or removed (false) `e164` from the table. */
export function noteDryRunDnc(effects: Effects, e164: string, listed: boolean): void {
  let overlay = overlays.get(effects)
  if (!overlay) overlays.set(effects, (overlay = new Map()))
  overlay.set(e164, listed)
}

/**
 * `numbers` (what the table lists) with the dry run's own changes made to it — of `among` only, when given (the numbers
 * a caller asked about).
 */
export function withOverlay(numbers: Set<string>, overlay: DncOverlay | undefined, among?: ReadonlySet<string>): Set<string> {
  for (const [phone, listed] of overlay ?? []) {
    if (among && !among.has(phone)) continue
    if (listed) numbers.add(phone)
    else numbers.delete(phone)
  }
  return numbers
}

/** Whether the table lists `e164` for this run: the dry run's own change if it made one, else `stored()`. */
export async function tableLists(overlay: DncOverlay | undefined, e164: string, stored: () => Promise<boolean>): Promise<boolean> {
  const own = overlay?.get(e164)
  return own ?? stored()
}
