import type { ToolDefinition } from '../../../controller/sidecar-client/sidecar-types.js';

/** A ToolDefinition for unit tests, with defaults. */
export function tool(overrides: Partial<ToolDefinition> & { name: string }): ToolDefinition {
  const parameters = overrides.parameters ?? { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] };
  return {
    description: `The ${overrides.name} tool.`,
    parametersJson: JSON.stringify(parameters),
    strict: false,
    deferLoading: false,
    executionMode: 'parallel',
    readOnly: true,
    destructive: false,
    ...overrides,
    parameters,
  };
}
