const MAP: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text into HTML text or attribute values. Everything from the data passes through here. */
export function escapeHtml(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => MAP[c]!)
}
