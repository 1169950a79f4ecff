/** The provider's base addresses (provider-notes). A workspace uses India only if provisioned there. */
export const REGION_BASE_URLS = {
  global: 'https://api.voice.formantai.com',
  india: 'https://api.in.voice.formantai.com',
} as const

export type Region = keyof typeof REGION_BASE_URLS
