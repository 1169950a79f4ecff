// Plain JavaScript, checked before anything else loads: on an older Node the sources fail in ways that do not say
// why (a missing API, a syntax error in a dependency).

/** The oldest Node.js switchboard runs on: package.json's `engines.node` (test/cli/node-version.test.ts keeps them equal). */
export const OLDEST_NODE = '20.19.0'

/**
 * Why this Node.js cannot run switchboard, as one line, or undefined when it can. `npm install` refuses an older Node
 * too (`engine-strict` in .npmrc); this catches one switched to after the install (nvm, a system upgrade gone back).
 */
export function nodeTooOld(version) {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const [oldestMajor = 0, oldestMinor = 0] = OLDEST_NODE.split('.').map(Number)
  if (major > oldestMajor || (major === oldestMajor && minor >= oldestMinor)) return undefined
  return `switchboard needs Node.js ${OLDEST_NODE} or newer; this is ${version} (${process.execPath}). Install a current Node.js (https://nodejs.org, or \`nvm install 22\`), then run npm install again`
}
