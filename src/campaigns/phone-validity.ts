import { Metadata, type PhoneNumber } from 'libphonenumber-js/max'

/**
 * `PhoneNumber.isValid()` of libphonenumber-js, with its regular expressions compiled once.
 *
 * The library builds `new RegExp('^(?:' + pattern + ')$')` on every check, and a country's fixed-line
 * pattern is over a thousand characters (India: 1,263): on a 100,000-row list that compiling was 40 % of
 * the whole batch (≈ 0.8 s of CPU). This is the same decision, step for step, as the library's
 * `isValidNumber` + `getNumberType` (1.13.x), over the same metadata; a test checks it agrees with
 * `isValid()` on every country's example numbers and on altered copies of them.
 */

/** The library's metadata accessors that its public typings leave out. */
interface TypeDefinition {
  pattern(): string
  possibleLengths(): number[] | undefined
}
interface PlanAccess {
  selectNumberingPlan(countryOrCallingCode: string): void
  hasTypes(): boolean
  nationalNumberPattern(): string
  type(name: string): TypeDefinition | undefined
}

/** Every type `getNumberType` tries (fixed line first, then the others); any match makes a number valid. */
const TYPES = ['FIXED_LINE', 'MOBILE', 'PREMIUM_RATE', 'TOLL_FREE', 'SHARED_COST', 'VOIP', 'PERSONAL_NUMBER', 'PAGER', 'UAN', 'VOICEMAIL']

type Check = (nationalNumber: string) => boolean

const entire = (pattern: string) => new RegExp(`^(?:${pattern})$`)

function compilePlan(plan: PlanAccess): Check {
  const national = entire(plan.nationalNumberPattern())
  if (!plan.hasTypes()) return (n) => national.test(n)
  const types: Array<{ lengths: number[] | undefined; re: RegExp }> = []
  for (const name of TYPES) {
    const definition = plan.type(name)
    const pattern = definition?.pattern()
    if (!definition || !pattern) continue
    types.push({ lengths: definition.possibleLengths(), re: entire(pattern) })
  }
  return (n) => national.test(n) && types.some((t) => (!t.lengths || t.lengths.includes(n.length)) && t.re.test(n))
}

const checks = new Map<string, Check>()

function checkFor(plan: string): Check {
  let check = checks.get(plan)
  if (!check) {
    // The max bundle's Metadata is bound to the max metadata, as `PhoneNumber`s parsed from it are.
    const metadata = new Metadata() as unknown as PlanAccess
    metadata.selectNumberingPlan(plan)
    check = compilePlan(metadata)
    checks.set(plan, check)
  }
  return check
}

/** Whether a number parsed by libphonenumber-js/max is valid: the answer of `number.isValid()`, faster. */
export function isValidPhoneNumber(number: PhoneNumber): boolean {
  const plan = number.country ?? number.countryCallingCode
  if (!plan) return false
  return checkFor(plan)(number.nationalNumber)
}
