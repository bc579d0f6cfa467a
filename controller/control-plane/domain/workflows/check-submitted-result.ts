import { isJSONObject } from '../../../../src/index.js';
import { compileJsonSchema } from '../../../../src/arguments/json-schema-validator.js';
import { ajvIssues } from '../../../../src/arguments/format-issues.js';

/** The outcome of checking a submitted value against the persisted schema. */
export type SubmittedResultCheck = { ok: true; resultJson: string } | { ok: false; reasons: string };

const MAX_REASONS = 8;

/** The largest committed result, in characters of JSON: dependents read it in their prompts. */
export const DEFAULT_MAX_RESULT_CHARS = 256_000;

/**
 * Validates a submitted value against the result schema persisted at `workflow_start` (the text
 * kept in the store, not the schema the sidecar used), the last gate before a commit, and bounds its
 * size (`maxResultChars`, default 256,000 characters of JSON). Never throws:
 * a schema that no longer parses or compiles is a failed check with that reason.
 */
export function checkSubmittedResult(
  resultSchemaJson: string,
  value: unknown,
  options: { cache?: Map<string, ReturnType<typeof compileJsonSchema>>; maxResultChars?: number } = {},
): SubmittedResultCheck {
  const { cache } = options;
  let compiled = cache?.get(resultSchemaJson);
  if (!compiled) {
    let schema: unknown;
    try {
      schema = JSON.parse(resultSchemaJson);
    } catch (error) {
      return { ok: false, reasons: `the persisted result schema is not JSON: ${(error as Error).message}` };
    }
    if (!isJSONObject(schema)) return { ok: false, reasons: 'the persisted result schema is not a JSON object' };
    compiled = compileJsonSchema(schema);
    cache?.set(resultSchemaJson, compiled);
  }
  if (!compiled.ok) return { ok: false, reasons: compiled.message };
  if (value === undefined) return { ok: false, reasons: 'no value was submitted' };
  if (!compiled.validate(value)) {
    const issues = ajvIssues(compiled.validate.errors ?? [], value);
    const lines = issues.slice(0, MAX_REASONS).map((issue) => `${issue.path === '' ? '(the value)' : issue.path}: ${issue.message}`);
    if (issues.length > MAX_REASONS) lines.push(`and ${issues.length - MAX_REASONS} more`);
    return { ok: false, reasons: lines.join('; ') };
  }
  const resultJson = JSON.stringify(value);
  const max = options.maxResultChars ?? DEFAULT_MAX_RESULT_CHARS;
  if (resultJson.length > max) return { ok: false, reasons: `the result is ${resultJson.length} characters of JSON; a committed result may have at most ${max}` };
  return { ok: true, resultJson };
}
