/**
 * JSON text laid out `indent` spaces a level, as `JSON.stringify(JSON.parse(text), null, indent)` lays it out, but
 * without parsing a value: numbers past a double's precision (`12345678901234567890`), a key given twice, escapes and
 * the order of keys stay as written — what the sender sent, only the spacing between tokens changed. The text must be
 * JSON (checked by the caller): whitespace outside strings is all this moves.
 */
export function indentJson(text: string, indent = 2): string {
  const out: string[] = []
  let depth = 0
  const newline = () => out.push('\n', ' '.repeat(depth * indent))
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === '"') {
      // A string, escapes and all, as it is.
      let end = i + 1
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      out.push(text.slice(i, end + 1))
      i = end
    } else if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']'
      let next = i + 1
      while (next < text.length && isSpace(text[next]!)) next++
      if (text[next] === close) {
        out.push(c, close)
        i = next
      } else {
        out.push(c)
        depth++
        newline()
      }
    } else if (c === '}' || c === ']') {
      depth--
      newline()
      out.push(c)
    } else if (c === ',') {
      out.push(',')
      newline()
    } else if (c === ':') {
      out.push(': ')
    } else if (!isSpace(c)) {
      out.push(c)
    }
  }
  return out.join('')
}

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r'
}
