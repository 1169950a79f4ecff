/**
 * What a failed listen means for the person starting the service, and what to change: the port is taken (a
 * switchboard already running, another program), needs privileges, or the host is not this machine's. Other
 * errors keep their own message. `what` names the settings in the caller's words (`PORT` and `HOST`, or
 * `--port` and `--host`).
 */
export function explainListenError(error: unknown, at: { host: string; port: number }, what: { port: string; host: string } = { port: 'PORT', host: 'HOST' }): Error {
  const code = (error as { code?: unknown } | null)?.code
  const where = `${at.host.includes(':') ? `[${at.host}]` : at.host}:${at.port}`
  if (code === 'EADDRINUSE') {
    return new Error(`cannot listen on ${where}: the port is already in use — another switchboard (or another program) is listening there. Stop it, or set ${what.port} to a free port`, { cause: error })
  }
  if (code === 'EACCES') {
    return new Error(`cannot listen on ${where}: permission denied (ports below 1024 need privileges). Set ${what.port} to 1024 or above, and put a reverse proxy in front for port 80/443`, { cause: error })
  }
  if (code === 'EADDRNOTAVAIL') {
    return new Error(`cannot listen on ${where}: ${at.host} is not an address of this machine. Set ${what.host} to one of its addresses (127.0.0.1 for this machine only, 0.0.0.0 for all)`, { cause: error })
  }
  return new Error(`cannot listen on ${where}: ${(error as Error)?.message ?? String(error)}`, { cause: error })
}
