import { H3 } from 'h3'

/**
 * The baseline every webhook benchmark compares with: an h3 app that only reads the body and answers 204.
 * The strictest baseline: the body is read straight off the Node stream (faster than srvx's
 * `req.arrayBuffer()`).
 */
export function createBareWebhookApp(): H3 {
  const bare = new H3()
  bare.post('/webhooks/formant', async (event) => {
    const node = event.runtime?.node?.req
    if (node) {
      const chunks: Buffer[] = []
      for await (const chunk of node) chunks.push(chunk as Buffer)
      Buffer.concat(chunks)
    } else await event.req.arrayBuffer()
    return new Response(null, { status: 204 })
  })
  return bare
}
