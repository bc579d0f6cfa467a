/**
 * The embedded model's "call TOOL with KEY=VALUE, ..." step: when the prompt names a tool, it calls
 * that tool (and nothing else), with the arguments the prompt gives and values sampled from the
 * tool's schema for the required ones it does not, then answers with what the tool returned. A
 * reader without a key sees a model call their own tool (`--prompt "call greet with name=Ada"`).
 */
import { isJSONObject, type JSONValue } from '../../src/index.js';
import { sampleJsonValue } from './sample-json-value.js';

/** What the prompt asks: the tool's name (plain, `namespace.name` or `namespace__name`) and the arguments given. */
export interface NamedCall {
  tool: string;
  given: Record<string, string>;
}

const CALL = /\bcall\s+(?:the\s+)?(?:tool\s+)?`?([A-Za-z0-9_.-]+?)`?(?:\s+(?:tool\s+)?with\s+(.+))?\s*$/is;

/**
 * The tool call a prompt asks for: "call greet", "call greet with name=Ada, times=2",
 * "call the tool `notes.add` with text="buy milk"". Undefined when the prompt asks for none.
 */
export function namedCallIn(prompt: string): NamedCall | undefined {
  const match = CALL.exec(prompt.trim());
  if (!match) return undefined;
  const given: Record<string, string> = {};
  // key=value pairs, separated by commas, "and" or spaces; a value may be quoted.
  const pairs = /([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,]+)/g;
  for (const pair of (match[2] ?? '').matchAll(pairs)) {
    const raw = pair[2]!;
    given[pair[1]!] = raw.startsWith("'") ? raw.slice(1, -1) : raw.startsWith('"') ? raw : raw.replace(/[.;!?]+$/, '');
  }
  return { tool: match[1]!.replace(/[.,;:!?]+$/, ''), given };
}

/** `text` as the property's schema type wants it: a number, a boolean, JSON, or the text itself. */
function coerce(text: string, schema: unknown): JSONValue {
  const type = isJSONObject(schema) ? schema.type : undefined;
  if (text.startsWith('"')) {
    try {
      return JSON.parse(text) as string;
    } catch {
      return text.slice(1, -1);
    }
  }
  if (type === 'number' || type === 'integer') return Number.isFinite(Number(text)) ? Number(text) : text;
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  if (type === 'array' || type === 'object') {
    try {
      return JSON.parse(text) as JSONValue;
    } catch {
      return type === 'array' ? text.split('|') : text;
    }
  }
  return text;
}

/**
 * The arguments of the call: every given value (as its property's type wants it), then a sampled
 * value for each required property not given. Properties the schema does not name are kept: the
 * sidecar's validation then says what is wrong, as it would for a real model.
 */
export function namedCallArguments(parameters: Record<string, unknown>, given: Record<string, string>): Record<string, JSONValue> {
  const properties = isJSONObject(parameters.properties) ? parameters.properties : {};
  const required = Array.isArray(parameters.required) ? parameters.required.filter((key): key is string => typeof key === 'string') : [];
  const result: Record<string, JSONValue> = {};
  for (const [key, text] of Object.entries(given)) result[key] = coerce(text, properties[key]);
  for (const key of required) {
    if (!(key in result)) result[key] = sampleJsonValue(properties[key] ?? {}, { root: parameters as never, text: key });
  }
  return result;
}

/** The answer after the call: what the tool returned (its first lines), or that it is not offered. */
export function namedCallAnswer(call: NamedCall, outcome: { offered: string[] } | { name: string; arguments: string; output: string }): string {
  if ('offered' in outcome) {
    const list = outcome.offered.slice(0, 20).join(', ');
    return `You asked me to call ${call.tool}, but this turn offers no tool of that name. The tools offered: ${list || '(none)'}${outcome.offered.length > 20 ? ', …' : ''}.\n(Answer from the embedded scripted model, a stand-in for a real one.)`;
  }
  const lines = outcome.output.split('\n');
  const shown = lines.slice(0, 20).join('\n');
  return [
    `I called ${outcome.name} with ${outcome.arguments}. It returned:`,
    shown + (lines.length > 20 ? '\n…' : ''),
    '(Answer from the embedded scripted model, a stand-in for a real one.)',
  ].join('\n');
}
