import type { Runtime } from '../runtime.ts'
import type { Effects } from '../effects.ts'
import { addToDnc, dncNumber, dncRemovalNumber, removeFromDnc, tableHas } from './dnc.ts'
import { dncOverlayOf, noteDryRunDnc, tableLists } from './dry-run-dnc.ts'

/**
 * A recipe's `addToDnc` (and runFollowUps' opt-outs): the real run writes the table, a dry run only notes the number
 * for the rest of the run (src/campaigns/dry-run-dnc.ts). Both answer as the real one would — `added` false when the
 * table lists the number already — and both put the change in the run's plan, so a run's record shows it.
 */
export async function addToDncFor(
  rt: Runtime,
  effects: Effects,
  phone: string,
  details: { reason?: string | null; source?: string | null } = {},
): Promise<{ added: boolean; phone: string }> {
  let result: { added: boolean; phone: string }
  if (effects.dryRun) {
    // The number as the list keys it, or the refusal the real `addToDnc` gives: a dry run refuses it the same.
    const e164 = dncNumber(rt, phone)
    result = { added: !(await tableLists(dncOverlayOf(effects), e164, () => tableHas(rt, e164))), phone: e164 }
    noteDryRunDnc(effects, e164, true)
  } else result = await addToDnc(rt, phone, details)
  if (result.added) effects.plan.push({ kind: 'dnc', action: 'add', phone: result.phone, reason: details.reason ?? null })
  return result
}

/** A recipe's `removeFromDnc`: true when the table listed the number (the file is not changed), in a dry run too. */
export async function removeFromDncFor(rt: Runtime, effects: Effects, phone: string): Promise<boolean> {
  const e164 = dncRemovalNumber(rt, phone)
  let removed: boolean
  if (effects.dryRun) {
    removed = await tableLists(dncOverlayOf(effects), e164, () => tableHas(rt, e164))
    noteDryRunDnc(effects, e164, false)
  } else removed = await removeFromDnc(rt, phone)
  if (removed) effects.plan.push({ kind: 'dnc', action: 'remove', phone: e164 })
  return removed
}
