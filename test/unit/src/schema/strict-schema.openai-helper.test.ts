// Our strict conversion side by side with OpenAI's own helper (`zodResponsesFunction` from
// `openai/helpers/zod`, openai 6.49, zod v4) on the shared corpus: where the helper produces a strict
// schema ours is the same (modulo `$defs` naming); where it throws, ours refuses too; every other case
// is a design note of the README, asserted here as the difference it describes.
import { readFileSync } from 'node:fs';
import { zodResponsesFunction } from 'openai/helpers/zod';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { convertToStrictJSONSchema, isJSONObject, zodToJSONSchema, type JSONObject, type JSONValue } from '../../../../src/index.js';
import { corpus, type DesignNote } from './strict-corpus.js';

type HelperOutcome = { ok: true; schema: JSONObject } | { ok: false; message: string };

function helper(schema: z.ZodType): HelperOutcome {
  try {
    return { ok: true, schema: zodResponsesFunction({ name: 'probe', parameters: schema as never }).parameters as JSONObject };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** `$schema` dropped, draft-07 `definitions` spelled `$defs`, refs to match. */
function normalize(value: JSONValue): JSONValue {
  if (Array.isArray(value)) return value.map(normalize);
  if (!isJSONObject(value)) return value;
  const out: JSONObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$schema') continue;
    if (key === '$ref' && typeof child === 'string') out.$ref = child.replace('#/definitions/', '#/$defs/');
    else out[key === 'definitions' ? '$defs' : key] = normalize(child);
  }
  return out;
}

function property(schema: JSONObject, name: string): JSONObject {
  const properties = schema.properties as JSONObject;
  return properties[name] as JSONObject;
}

const differences: Record<DesignNote, (theirs: HelperOutcome, ours: ReturnType<typeof convertToStrictJSONSchema>) => void> = {
  'optional as nullable': (theirs, ours) => {
    expect(theirs.ok ? 'produced' : theirs.message).toMatch(/uses `\.optional\(\)` without `\.nullable\(\)`/);
    expect(ours.ok).toBe(true);
  },
  'defaults as nullable': (theirs, ours) => {
    // The helper describes the output side: a defaulted field is required and never null there.
    if (!theirs.ok || !ours.ok) throw new Error('both should convert');
    expect(property(theirs.schema, 'mode')).toEqual({ type: 'string', enum: ['create', 'append'], default: 'create' });
    expect(property(ours.schema, 'mode')).toEqual({ anyOf: [{ type: 'string', enum: ['create', 'append'] }, { type: 'null' }], description: '(default: "create")' });
  },
  'constraints strict mode does not take': (theirs, ours) => {
    if (!theirs.ok || !ours.ok) throw new Error('both should convert');
    // The helper keeps them as keywords; ours moves them into the description and checks them itself.
    expect(normalize(theirs.schema)).toEqual(ours.enforced);
    expect(JSON.stringify(ours.schema)).toMatch(/"description":"\((minLength|format): /);
    expect(JSON.stringify(ours.schema)).not.toMatch(/"(minLength|maxLength)":|"format":"uri"/);
  },
  'exclusive oneOf as anyOf': (theirs, ours) => {
    if (!theirs.ok || !ours.ok) throw new Error('both should convert');
    expect(property(theirs.schema, 'value')).toEqual({ oneOf: [{ type: 'string' }, { type: 'number' }] });
    expect(property(ours.schema, 'value')).toEqual({ anyOf: [{ type: 'string' }, { type: 'number' }] });
  },
  'values of any type': (theirs, ours) => {
    // The helper sends `{}`, which strict mode rejects ("schema must have a 'type' key").
    if (!theirs.ok) throw new Error('the helper should convert');
    expect(property(theirs.schema, 'data')).toEqual({});
    expect(ours.ok).toBe(false);
  },
  'overlapping oneOf': (theirs, ours) => {
    if (!theirs.ok) throw new Error('the helper should convert');
    expect(property(theirs.schema, 'id')).toHaveProperty('oneOf');
    expect(ours.ok).toBe(false);
  },
  transforms: (theirs, ours) => {
    // The helper converts the output side, which a transform makes unknowable; the model writes the input.
    expect(theirs.ok ? 'produced' : theirs.message).toMatch(/Transforms cannot be represented/);
    if (!ours.ok) throw new Error('ours should convert');
    expect(property(ours.schema, 'words')).toEqual({ type: 'string' });
  },
};

describe('strict conversion compared with openai/helpers/zod', () => {
  for (const entry of corpus) {
    it(`${entry.name}: ${entry.helper}`, () => {
      const theirs = helper(entry.schema);
      const ours = convertToStrictJSONSchema(zodToJSONSchema(entry.schema));
      expect(ours.ok).toBe(entry.refused === undefined);
      if (entry.helper === 'same') {
        if (!theirs.ok) throw new Error(`the helper threw: ${theirs.message}`);
        if (!ours.ok) throw new Error(ours.refusal.message);
        expect(ours.schema).toEqual(normalize(theirs.schema));
      } else if (entry.helper === 'throws') {
        expect(theirs.ok).toBe(false);
        expect(ours.ok).toBe(false);
      } else {
        differences[entry.helper](theirs, ours);
      }
    });
  }

  it('the tools guide (docs/tools.md) explains every difference', () => {
    const readme = readFileSync(new URL('../../../../docs/tools.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Strict mode'));
    expect(section.length).toBeLessThan(readme.length);
    for (const note of Object.keys(differences)) expect(section, note).toContain(`**${note}**`);
  });
});
