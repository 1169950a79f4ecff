import type { H3Event } from 'h3'
import { adminAccessOf } from '../utils/admin-auth.ts'
import { assetUrl } from './assets.ts'
import { html, jsonAttr, type HtmlValue, type SafeHtml } from './html.ts'
import { rootFrom } from './root-relative.ts'
import { setPageHeaders } from './security-headers.ts'

export const NAV = [
  { href: 'ui', label: 'Overview' },
  { href: 'ui/events', label: 'Events' },
  { href: 'ui/recipes', label: 'Recipes' },
  { href: 'ui/calls', label: 'Calls' },
  { href: 'ui/campaigns', label: 'Campaigns' },
  { href: 'ui/destinations', label: 'Destinations' },
  { href: 'ui/mail', label: 'Mail & DNC' },
] as const

/** The CSRF token of the request's session ('' for bearer access, which needs none). */
export function csrfOf(event: H3Event): string {
  const access = adminAccessOf(event)
  return access?.via === 'session' ? access.session.csrf : ''
}

/** A hidden `_csrf` field for forms that post without JavaScript. */
export function csrfField(event: H3Event): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrfOf(event)}">`
}

export interface PageOptions {
  title: string
  /** The nav entry to mark as current. */
  active?: string
  body: HtmlValue
  /** A notice at the top (after an action). */
  flash?: string | null
}

function shell(event: H3Event, title: string, inner: HtmlValue, withNav: boolean, active?: string): string {
  const csrf = csrfOf(event)
  setPageHeaders(event)
  event.res.headers.set('content-type', 'text/html; charset=utf-8')
  return html`<!doctype html>
<html lang="en" data-theme="light">
<head>
<meta charset="utf-8">
<base href="${rootFrom(event.url.pathname)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<meta name="htmx-config" content="${jsonAttr({ includeIndicatorStyles: false, allowEval: false, allowScriptTags: false })}">
<title>${title} · switchboard</title>
<link rel="stylesheet" href="${assetUrl('pico.min.css')}">
<link rel="stylesheet" href="${assetUrl('uPlot.min.css')}">
<link rel="stylesheet" href="${assetUrl('app.css')}">
<script src="${assetUrl('htmx.min.js')}" defer></script>
<script src="${assetUrl('locale-guard.js')}" defer></script>
<script src="${assetUrl('uPlot.iife.min.js')}" defer></script>
<script src="${assetUrl('app.js')}" defer></script>
</head>
<body hx-headers="${csrf ? jsonAttr({ 'X-CSRF-Token': csrf }) : '{}'}">
<header class="container">
<nav>
<ul><li><a href="ui" class="brand"><strong>switchboard</strong></a></li></ul>
${withNav
  ? html`<ul class="nav-links">${NAV.map((n) => html`<li><a href="${n.href}"${n.label === active ? html` aria-current="page"` : ''}>${n.label}</a></li>`)}
<li><form method="post" action="ui/logout" class="inline">${csrfField(event)}<button type="submit" class="outline secondary small">Log out</button></form></li></ul>`
  : ''}
</nav>
</header>
<main class="container">
${inner}
</main>
</body>
</html>`.value
}

/** A full dashboard page (signed in). */
export function page(event: H3Event, options: PageOptions): string {
  const body = html`<h1>${options.title}</h1>
${options.flash ? html`<p class="flash" role="status">${options.flash}</p>` : ''}
${options.body}`
  return shell(event, options.title, body, true, options.active ?? options.title)
}

/** A page outside the session (login). */
export function barePage(event: H3Event, title: string, body: HtmlValue): string {
  return shell(event, title, html`<h1>${title}</h1>${body}`, false)
}
