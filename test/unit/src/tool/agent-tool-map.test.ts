import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkerTool, isToolRuntimeError, textResult } from '../../../../src/index.js';
import { agentToolMap } from '../../../../src/tool/agent-tool-map.js';

const make = (name: string, namespace?: string) =>
  defineWorkerTool({ name, namespace, description: `${name} tool`, schema: z.object({}), execute: async () => textResult(name) });

describe('agentToolMap', () => {
  it('keys tools by namespace and name', () => {
    const read = make('read');
    const ghSearch = make('search', 'github');
    const glSearch = make('search', 'gitlab');
    const map = agentToolMap([read, ghSearch, glSearch]);
    expect([...map.keys()]).toEqual(['read', 'github.search', 'gitlab.search']);
    expect(map.get('github.search')).toBe(ghSearch);
    expect(map.get('gitlab.search')).toBe(glSearch);
    expect(map.get('search')).toBeUndefined();
  });

  it('throws duplicate_tool for the same namespace and name', () => {
    let caught: unknown;
    try {
      agentToolMap([make('read'), make('search', 'github'), make('search', 'github')]);
    } catch (error) {
      caught = error;
    }
    expect(isToolRuntimeError(caught, 'duplicate_tool')).toBe(true);
    expect((caught as Error).message).toContain('"github.search"');
  });
});
