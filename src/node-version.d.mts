// Types of src/node-version.mjs (plain JavaScript: src/bin.mjs checks the Node version before loading anything else).

/** The oldest Node.js switchboard runs on: package.json's `engines.node`. */
export const OLDEST_NODE: string
/** Why this Node.js cannot run switchboard, as one line, or undefined when it can. */
export function nodeTooOld(version: string): string | undefined
