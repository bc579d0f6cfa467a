import type { CallContentPart } from '../sidecar-client/sidecar-types.js';

/** A `function_call_output` item's `output`: a string, or a list of input parts. */
export type FunctionOutput =
  | string
  | Array<{ type: 'input_text'; text: string } | { type: 'input_image'; image_url: string }>;

/**
 * Converts a call result's content to a function_call_output's `output`: a single text part (or
 * nothing) becomes a string; anything else a list of `input_text` / `input_image` (data URL)
 * parts. JSON parts travel as text.
 */
export function toFunctionOutput(content: CallContentPart[]): FunctionOutput {
  if (content.length === 0) return '';
  const only = content[0];
  if (content.length === 1 && only && only.type !== 'image') return only.type === 'text' ? only.text : only.json;
  return content.map((part) => {
    if (part.type === 'text') return { type: 'input_text' as const, text: part.text };
    if (part.type === 'json') return { type: 'input_text' as const, text: part.json };
    return {
      type: 'input_image' as const,
      image_url: `data:${part.mimeType};base64,${Buffer.from(part.data).toString('base64')}`,
    };
  });
}
