// The proto's workflow definition as the domain's checker input: the one place the workflow
// checks meet the generated type, so domain/workflows/ names none.
import type { WorkflowDefinition as ProtoWorkflowDefinition } from '../../../src/gen/toolruntime/v1/control_plane.js';
import type { WorkflowDefinitionInput } from '../domain/workflows/validate-workflow-definition.js';

/** The proto's definition (result schemas as text) as checker input. */
export function fromProtoDefinition(definition: ProtoWorkflowDefinition | undefined): WorkflowDefinitionInput {
  if (!definition) return { name: undefined, tasks: undefined };
  return {
    name: definition.name,
    maxParallel: definition.maxParallel,
    tasks: definition.tasks.map((task) => ({
      id: task.id,
      prompt: task.prompt,
      result_schema: task.resultSchemaJson,
      depends_on: task.dependsOn,
      max_attempts: task.maxAttempts,
    })),
  };
}
