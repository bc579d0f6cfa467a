import type TurndownService from 'turndown';
import { loadOnFirstUse } from '../../../src/load-on-first-use.js';

// turndown (and the DOM it parses with) is loaded with the first HTML page, not at start-up.
const loadTurndown = loadOnFirstUse<typeof TurndownService>('turndown');
let turndown: TurndownService | undefined;

function getTurndown(): TurndownService {
  if (turndown) return turndown;
  turndown = new (loadTurndown())({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  // Noise a reader does not want: scripts, styles, navigation, forms, embedded media.
  turndown.remove(['script', 'style', 'noscript', 'nav', 'header', 'footer', 'aside', 'form', 'iframe', 'svg', 'canvas', 'template', 'head', 'title', 'button', 'select'] as never);
  return turndown;
}

const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name.startsWith('#x') || name.startsWith('#X')) return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith('#')) return String.fromCodePoint(Number.parseInt(name.slice(1), 10));
    return entities[name.toLowerCase()] ?? whole;
  });
}

/** A page as readable markdown, and its title. */
export interface MarkdownPage {
  title: string;
  markdown: string;
}

/**
 * Turns an HTML page into readable markdown with turndown: scripts, styles, navigation, headers,
 * footers and forms dropped; `<title>` taken apart as the title.
 */
export function htmlToMarkdown(html: string): MarkdownPage {
  const titleMatch = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html);
  const title = titleMatch ? decodeEntities(titleMatch[1]!.replace(/\s+/g, ' ').trim()) : '';
  const body = /<body[^>]*>([\s\S]*)<\/body>/i.exec(html)?.[1] ?? html;
  const markdown = getTurndown()
    .turndown(body)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, markdown };
}
