import sparticuz from '@sparticuz/chromium'
import { chromium, type Browser } from 'playwright-core'

/**
 * A headless Chromium that comes from `npm install` (@sparticuz/chromium ships one inside the package and
 * unpacks it to the temp folder on first use), driven by playwright-core. No system browser needed.
 * The background-networking flags keep Chromium from reaching for the network it cannot have here.
 * `--single-process` (meant for Lambda) is dropped: with it, closing one context ends the whole browser.
 */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = await sparticuz.executablePath()
  const args = [
    ...sparticuz.args.filter((arg) => arg !== '--single-process'),
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ]
  return chromium.launch({ executablePath, args: [...new Set(args)], headless: true })
}
