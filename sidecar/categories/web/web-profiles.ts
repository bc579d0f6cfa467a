// The web category's part of the configuration: its own types, named by the composed configuration
// (sidecar-config.ts) like every category's part.

/** The web_fetch profile; web_fetch is offered only when it is set. */
export interface WebFetchProfile {
  /** Allow private, loopback and link-local addresses (refused by default). */
  allowPrivateNetwork: boolean;
  maxRedirects: number;
  /** Largest response body read, in bytes. */
  maxBytes: number;
  timeoutMs: number;
  userAgent: string;
}

/** The web_search provider; web_search is offered only when it is set. */
export interface WebSearchProfile {
  provider: 'searxng' | 'brave';
  /** The SearXNG instance's base URL, or the Brave API endpoint (its default when empty). */
  url: string;
  /** Brave's subscription token. */
  apiKey?: string;
  timeoutMs: number;
  maxResults: number;
  /** Allow a provider URL on a private or loopback address (a self-hosted SearXNG). */
  allowPrivateNetwork: boolean;
}
