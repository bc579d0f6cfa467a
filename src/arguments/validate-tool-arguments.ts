import type { JSONObject } from '../json.js';
import type { WorkerAgentTool } from '../tool/worker-agent-tool.js';
import { compileJsonSchema } from './json-schema-validator.js';
import { ajvIssues, capMessage, formatIssues, zodIssues, type ArgumentIssue } from './format-issues.js';
import { repairArguments, type RepairStep } from './repair-arguments.js';
import { prepareStrictArguments } from './strict-zod-arguments.js';

/** Arguments over this many UTF-8 bytes fail fast unless `maxBytes` says otherwise: 1 MiB. */
export const DEFAULT_MAX_ARGUMENT_BYTES = 1024 * 1024;

/** Options of `validateToolArguments`. */
export interface ValidateToolArgumentsOptions {
  /** The size cap in UTF-8 bytes; default `DEFAULT_MAX_ARGUMENT_BYTES`. */
  maxBytes?: number;
}

/** Why arguments were refused: a code from the ToolRuntimeError family and a message for the model. */
export interface ArgumentsError {
  code: 'invalid_arguments' | 'arguments_too_large';
  message: string;
}

/** What `validateToolArguments` returns; `repairs` names each step taken, in order. */
export type ValidateToolArgumentsResult<TParams = unknown> =
  | { ok: true; value: TParams; repairs: RepairStep[] }
  | { ok: false; error: ArgumentsError; repairs: RepairStep[] };

/**
 * Turns the model's arguments string into the params `execute` receives: size cap, the bounded
 * repair ladder of `repairArguments`, then the tool's schema. Zod tools are parsed with
 * `safeParse` (input side: defaulted fields may be absent). Strict Zod tools also turn `null` into
 * absent for optional fields and refuse undeclared fields (their wire schema said
 * `additionalProperties: false`). Raw `jsonSchema` tools are checked with ajv (compiled once per
 * schema); with both, ajv checks first and Zod produces the params.
 *
 * Clean arguments cost one `JSON.parse` and one `safeParse`. Never throws, whatever the input:
 * failures come back as `{ ok: false, error }` with a message naming each bad field path.
 */
export function validateToolArguments<TParams>(
  tool: WorkerAgentTool<TParams>,
  argumentsJson: string,
  options: ValidateToolArgumentsOptions = {},
): ValidateToolArgumentsResult<TParams> {
  let repairs: RepairStep[] = [];
  try {
    if (typeof argumentsJson !== 'string') {
      return invalid(`Invalid arguments for tool \`${tool.name}\`: expected a JSON string, got ${argumentsJson === null ? 'null' : typeof argumentsJson}`, repairs);
    }
    // A cap that is not a number >= 0 is a caller's slip: fall back to the default, never to no cap.
    const maxBytes = typeof options.maxBytes === 'number' && options.maxBytes >= 0 ? options.maxBytes : DEFAULT_MAX_ARGUMENT_BYTES;
    // A UTF-16 unit is 1 to 3 UTF-8 bytes: only a string in between needs counting.
    if (argumentsJson.length > maxBytes || (argumentsJson.length * 3 > maxBytes && Buffer.byteLength(argumentsJson, 'utf8') > maxBytes)) {
      return {
        ok: false,
        error: {
          code: 'arguments_too_large',
          message: `Arguments for tool \`${tool.name}\` are over the ${maxBytes}-byte limit (${Buffer.byteLength(argumentsJson, 'utf8')} bytes): send less, or split the work into several calls.`,
        },
        repairs,
      };
    }

    const repaired = repairArguments(argumentsJson);
    repairs = repaired.repairs;
    if (!repaired.ok) return invalid(capMessage(`Invalid arguments for tool \`${tool.name}\`: ${repaired.message}.`), repairs);
    return checkSchema(tool, repaired.value, repairs);
  } catch (error) {
    const message = error instanceof RangeError ? 'the arguments are nested too deeply' : `validation failed: ${(error as Error)?.message ?? String(error)}`;
    return invalid(capMessage(`Invalid arguments for tool \`${tool?.name}\`: ${message}.`), repairs);
  }
}

function checkSchema<TParams>(tool: WorkerAgentTool<TParams>, value: JSONObject, repairs: RepairStep[]): ValidateToolArgumentsResult<TParams> {
  const issues: ArgumentIssue[] = [];
  if (tool.jsonSchema !== undefined) {
    const compiled = compileJsonSchema(tool.jsonSchema);
    if (!compiled.ok) return invalid(`Invalid arguments for tool \`${tool.name}\`: ${compiled.message}.`, repairs);
    if (!compiled.validate(value)) return invalid(formatIssues(tool.name, ajvIssues(compiled.validate.errors ?? [], value)), repairs);
    if (tool.schema === undefined) return { ok: true, value: value as TParams, repairs };
  }
  const schema = tool.schema;
  if (schema === undefined) {
    return invalid(`Invalid arguments for tool \`${tool.name}\`: the tool has no schema to validate against.`, repairs);
  }

  let input: unknown = value;
  if (tool.strict) {
    // With a raw jsonSchema, ajv already enforced the owner's contract on extra fields.
    const prepared = prepareStrictArguments(schema, value, { rejectUnknownFields: tool.jsonSchema === undefined });
    if (prepared.nullsRemoved) repairs.push('null_to_absent');
    input = prepared.value;
    for (const path of prepared.unknownFields) issues.push({ path, message: 'unexpected field' });
  }
  const parsed = schema.safeParse(input);
  if (parsed.success && issues.length === 0) return { ok: true, value: parsed.data as TParams, repairs };
  if (!parsed.success) issues.push(...zodIssues(parsed.error, input));
  return invalid(formatIssues(tool.name, issues), repairs);
}

function invalid(message: string, repairs: RepairStep[]): { ok: false; error: ArgumentsError; repairs: RepairStep[] } {
  return { ok: false, error: { code: 'invalid_arguments', message }, repairs };
}
