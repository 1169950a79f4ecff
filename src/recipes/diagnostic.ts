import { shownPath } from '../utils/shown-path.ts'

/**
 * A recipe's type error as the checker reports it. Apart from the checker (src/recipes/typecheck.ts) so the
 * service can show one without loading TypeScript's compiler: importing that module costs ~0.7 s of start-up
 * in every thread that does.
 */
export interface RecipeDiagnostic {
  file: string
  /** 1-based. */
  line: number
  /** 1-based. */
  column: number
  message: string
  /** TS error code, e.g. 2345. */
  code: number
}

/** `file:line:col message`, the file relative to `cwd` when it is inside it. */
export function formatDiagnostic(d: RecipeDiagnostic, cwd = process.cwd()): string {
  return d.file ? `${shownPath(d.file, cwd)}:${d.line}:${d.column} ${d.message}` : d.message
}
