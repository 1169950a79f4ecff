/**
 * How the user typed this CLI, for the hints it prints ("Run … help"): `npm run -s cli --` from a checkout (npm
 * names the script it runs in `npm_lifecycle_event`), `switchboard` when installed as a package's bin. A hint
 * naming a program that is not on the PATH sends a newcomer looking for it.
 */
export function cliName(env: Record<string, string | undefined>): string {
  // `start`: the service run as `npm start` names a command to run beside it (serve's start-up warnings).
  return env.npm_lifecycle_event === 'cli' || env.npm_lifecycle_event === 'start' ? 'npm run -s cli --' : 'switchboard'
}
