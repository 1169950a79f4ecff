/**
 * `doctor`'s probe of the webhook URL: a body signed with the target's secret that is no event. The receiver answers it
 * after verifying the signature — proof that the URL reaches a receiver which accepts the secret — and stores and
 * counts nothing: however often `doctor` runs, it adds no rejected webhook to the metrics, the log's warnings or the
 * daily report's webhook health.
 */
export const DOCTOR_PROBE_BODY = '{"switchboard_doctor":true}'

/** What the receiver answers the probe with (200, JSON): `doctor` compares the text as it is. */
export const DOCTOR_PROBE_ANSWER = JSON.stringify({ switchboard: 'doctor probe: signature accepted; nothing stored' })

/** Whether a verified, parsed body is the probe (exactly its one field). */
export function isDoctorProbe(parsed: Record<string, unknown>): boolean {
  return parsed.switchboard_doctor === true && Object.keys(parsed).length === 1
}
