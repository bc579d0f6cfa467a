import type { ErrorObject } from 'ajv';
import type { z } from 'zod';

/** At most this many issue lines reach the model; the rest are counted. */
export const MAX_ISSUE_LINES = 8;
/** The whole message is cut to this many characters. */
export const MAX_MESSAGE_CHARS = 1500;

/** One problem with the arguments: where, and what was expected. */
export interface ArgumentIssue {
  /** `todos[0].status`; empty for the root. */
  path: string;
  message: string;
}

/**
 * The message the model reads: one line per field path and what was expected, capped so a
 * hundred bad fields cannot flood the context.
 */
export function formatIssues(toolName: string, issues: readonly ArgumentIssue[]): string {
  const lines = issues.slice(0, MAX_ISSUE_LINES).map((issue) => `- ${issue.path === '' ? '(root)' : issue.path}: ${issue.message}`);
  if (issues.length > MAX_ISSUE_LINES) lines.push(`- ... and ${issues.length - MAX_ISSUE_LINES} more`);
  return capMessage(`Invalid arguments for tool \`${toolName}\`:\n${lines.join('\n')}`);
}

/** Cuts a message to MAX_MESSAGE_CHARS. */
export function capMessage(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}

/** `['todos', 0, 'status']` → `todos[0].status`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** A short rendering of the value the model sent. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = root;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Zod's issues as lines for the model; `input` is the value Zod parsed, to say what it got. */
export function zodIssues(error: z.ZodError, input: unknown): ArgumentIssue[] {
  const issues: ArgumentIssue[] = [];
  for (const issue of error.issues) {
    const path = formatPath(issue.path);
    const got = valueAt(input, issue.path);
    switch (issue.code) {
      case 'invalid_type':
        issues.push({
          path,
          message: got === undefined ? 'required' : `expected ${issue.expected}, got ${typeName(got)} ${describeValue(got)}`,
        });
        break;
      case 'invalid_value': {
        const expected =
          issue.values.length === 1
            ? describeValue(issue.values[0])
            : `one of ${issue.values.map((v) => (typeof v === 'string' ? v : describeValue(v))).join(' | ')}`;
        issues.push({ path, message: got === undefined ? `required, expected ${expected}` : `expected ${expected}, got ${describeValue(got)}` });
        break;
      }
      case 'unrecognized_keys':
        for (const key of issue.keys) issues.push({ path: path === '' ? key : `${path}.${key}`, message: 'unexpected field' });
        break;
      case 'invalid_union':
        issues.push({ path, message: `does not match any allowed shape, got ${describeValue(got)}${closestBranch(issue.errors, issue.path, input)}` });
        break;
      default: {
        const message = lowerFirst(issue.message.replace(/^Invalid input: /, ''));
        issues.push({ path, message: got === undefined ? message : `${message}, got ${describeValue(got)}` });
      }
    }
  }
  return issues;
}

/** ajv's errors as lines for the model. */
export function ajvIssues(errors: readonly ErrorObject[], input: unknown): ArgumentIssue[] {
  return errors.map((error) => {
    const parts = error.instancePath
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    const path = formatPath(parts);
    const got = valueAt(input, parts);
    const params = error.params as Record<string, unknown>;
    const child = (name: unknown) => (path === '' ? String(name) : `${path}.${String(name)}`);
    switch (error.keyword) {
      case 'required':
        return { path: child(params.missingProperty), message: 'required' };
      case 'additionalProperties':
        return { path: child(params.additionalProperty), message: 'unexpected field' };
      case 'enum':
        return {
          path,
          message: `expected one of ${(params.allowedValues as unknown[]).map((v) => (typeof v === 'string' ? v : describeValue(v))).join(' | ')}, got ${describeValue(got)}`,
        };
      case 'type':
        return { path, message: `expected ${String(params.type)}, got ${typeName(got)} ${describeValue(got)}` };
      default:
        return { path, message: `${error.message ?? error.keyword}, got ${describeValue(got)}` };
    }
  });
}

/** The first problem of the union branch that came closest (fewest issues), as a hint. */
function closestBranch(branches: readonly (readonly z.core.$ZodIssue[])[], base: readonly PropertyKey[], input: unknown): string {
  let best: readonly z.core.$ZodIssue[] | undefined;
  for (const branch of branches) if (branch.length > 0 && (best === undefined || branch.length < best.length)) best = branch;
  const first = best?.[0];
  if (first === undefined) return '';
  const path = [...base, ...first.path];
  const [line] = zodIssues({ issues: [{ ...first, path }] } as unknown as z.ZodError, input);
  return line ? ` (closest option: ${line.path === '' ? '' : `${line.path}: `}${line.message})` : '';
}

function lowerFirst(text: string): string {
  return text.length > 0 ? text[0]!.toLowerCase() + text.slice(1) : text;
}
