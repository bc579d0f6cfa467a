// The layout sections of the README and docs/contributing.md name folders and files of the tree: this
// keeps them true. Each line of a section's block starts with one or more paths (two spaces apart),
// then its description (its first word that is not a path); an indented line's paths sit in the folder of the line above it, and a
// line's later paths are siblings of its first (`test/fakes/ fixtures/` is test/fakes and test/fixtures).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** The paths a layout block names, resolved against the repository's root. */
export function layoutPaths(markdown: string): string[] {
  const section = markdown.split(/^## Layout\s*$/m)[1];
  const block = section?.match(/^```\n([\s\S]*?)^```/m)?.[1];
  if (block === undefined) throw new Error('no ## Layout section with a ``` block');
  const parents: string[] = [];
  const paths: string[] = [];
  for (const line of block.split('\n')) {
    if (line.trim() === '') continue;
    const depth = (line.length - line.trimStart().length) / 2;
    // The leading run of paths, two spaces apart at most: three spaces, or the first word that is not a
    // path, start the description (a wrapped description line starts with a word, so it names nothing).
    const tokens: string[] = [];
    for (const token of line.trim().split(/ {3,}/)[0]!.split(/\s+/)) {
      if (!/^[\w./-]+(\/|\.[a-z]+)$|^Dockerfile$/.test(token)) break;
      tokens.push(token);
    }
    if (tokens.length === 0) continue;
    const base = depth === 0 ? '' : parents[depth - 1] ?? '';
    const first = join(base, tokens[0]!);
    paths.push(first);
    for (const token of tokens.slice(1)) paths.push(join(dirname(first), token));
    parents[depth] = first;
    parents.length = depth + 1;
  }
  return paths;
}

describe('the layout sections match the tree', () => {
  for (const file of ['README.md', 'docs/contributing.md']) {
    it(`every path ${file}'s layout names exists`, () => {
      const paths = layoutPaths(readFileSync(join(root, file), 'utf8'));
      expect(paths.length).toBeGreaterThan(10);
      expect(paths.filter((path) => !existsSync(join(root, path)))).toEqual([]);
    });
  }

  it('reads indentation and siblings as the blocks write them', () => {
    const markdown = '## Layout\n\n```\nsrc/    the library\n  tool/  schema/   contract\ntest/fakes/ fixtures/   fakes\n```\n';
    expect(layoutPaths(markdown)).toEqual(['src/', 'src/tool/', 'src/schema/', 'test/fakes/', 'test/fixtures/']);
  });
});
