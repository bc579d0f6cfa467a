import { z } from 'zod';
import { ToolRuntimeError } from '../errors.js';
import type { JSONObject } from '../json.js';

/**
 * Converts a tool's Zod schema to the JSON Schema the model sees, with zod v4's own
 * `z.toJSONSchema` on the *input* side (a field with a default is optional to the model).
 *
 * @throws ToolRuntimeError `invalid_definition` when the root is not an object schema, or when the
 *   schema holds something JSON Schema cannot represent.
 */
export function zodToJSONSchema(schema: z.ZodType): JSONObject {
  let jsonSchema: JSONObject;
  try {
    jsonSchema = z.toJSONSchema(schema, { io: 'input' }) as JSONObject;
  } catch (cause) {
    throw new ToolRuntimeError('invalid_definition', `cannot convert the schema to JSON Schema: ${(cause as Error).message}`, { cause });
  }
  if (jsonSchema.type !== 'object') {
    throw new ToolRuntimeError('invalid_definition', 'function tool parameters must use a root object schema');
  }
  return jsonSchema;
}
