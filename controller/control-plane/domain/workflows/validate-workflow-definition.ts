/**
 * The one check of a workflow definition, shared by `workflow_start` (a ControlRequest from a
 * sidecar, or ControlPlaneService) and `controller workflow run FILE`. Every refusal names what is
 * wrong and what to do, so a model can fix its definition and try again.
 */
import { isJSONObject, type JSONObject } from '../../../../src/index.js';
import { compileJsonSchema } from '../../../../src/arguments/json-schema-validator.js';
import { ControlPlaneError } from '../control-plane-error.js';
import type { WorkflowDefinition, WorkflowTaskDefinition } from './workflow-store.js';

/** The bounds a definition must keep. */
export interface WorkflowLimits {
  maxTasks: number;
  maxNameChars: number;
  maxPromptChars: number;
  /** Of one result schema, as JSON text. */
  maxSchemaChars: number;
  maxAttempts: number;
  maxParallel: number;
  defaultMaxParallel: number;
  defaultMaxAttempts: number;
  /** Running workflows per agent (checked by the store when the run is created). */
  maxRunningPerAgent: number;
}

export const defaultWorkflowLimits: Readonly<WorkflowLimits> = {
  maxTasks: 500,
  maxNameChars: 200,
  maxPromptChars: 20_000,
  maxSchemaChars: 20_000,
  maxAttempts: 10,
  maxParallel: 32,
  defaultMaxParallel: 4,
  defaultMaxAttempts: 2,
  maxRunningPerAgent: 10,
};

/** A definition before the checks: a task's schema is a parsed value or the JSON text of one. */
export interface WorkflowDefinitionInput {
  name: unknown;
  tasks: unknown;
  maxParallel?: unknown;
}

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_PROBLEMS = 8;

/**
 * Reads a workflow file's text: `{ name, tasks: [{ id, prompt, result_schema, depends_on?,
 * max_attempts? }], max_parallel? }`, then checks it as `validateWorkflowDefinition` does.
 *
 * @throws ControlPlaneError `invalid_request` with a one-line message when the text is not JSON or
 *   the definition is invalid.
 */
export function parseWorkflowFile(text: string, limits: WorkflowLimits = defaultWorkflowLimits): WorkflowDefinition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ControlPlaneError('invalid_request', `the workflow file is not JSON: ${(error as Error).message}`);
  }
  if (!isJSONObject(parsed)) throw new ControlPlaneError('invalid_request', 'the workflow file must hold a JSON object: { "name", "tasks": [...], "max_parallel"? }');
  const unknownKeys = Object.keys(parsed).filter((key) => !['name', 'tasks', 'max_parallel'].includes(key));
  if (unknownKeys.length > 0) {
    throw new ControlPlaneError('invalid_request', `invalid workflow: unknown field ${unknownKeys.map((key) => JSON.stringify(key)).join(', ')} (expected name, tasks, max_parallel)`);
  }
  return validateWorkflowDefinition({ name: parsed.name, tasks: parsed.tasks, maxParallel: parsed.max_parallel }, limits);
}

/**
 * Checks a definition and returns it normalised (defaults filled, schemas parsed). Refuses repeated
 * or malformed task ids, unknown dependencies, cycles, result schemas that are not a JSON Schema
 * object that compiles, and anything past `limits`.
 *
 * @throws ControlPlaneError `invalid_request` (or `limit_exceeded` for a size limit) whose one-line
 *   message lists up to 8 problems.
 */
export function validateWorkflowDefinition(input: WorkflowDefinitionInput, limits: WorkflowLimits = defaultWorkflowLimits): WorkflowDefinition {
  const problems: string[] = [];
  let overLimit = false;
  const limit = (message: string) => {
    overLimit = true;
    problems.push(message);
  };
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name === '') problems.push('"name" must be a non-empty string');
  else if (name.length > limits.maxNameChars) limit(`"name" is ${name.length} characters; at most ${limits.maxNameChars}`);

  let maxParallel = limits.defaultMaxParallel;
  if (input.maxParallel !== undefined && input.maxParallel !== null && input.maxParallel !== 0) {
    if (!Number.isInteger(input.maxParallel) || (input.maxParallel as number) < 1) problems.push('"max_parallel" must be a positive integer');
    else if ((input.maxParallel as number) > limits.maxParallel) limit(`"max_parallel" is ${String(input.maxParallel)}; at most ${limits.maxParallel}`);
    else maxParallel = input.maxParallel as number;
  }

  const tasks: WorkflowTaskDefinition[] = [];
  if (!Array.isArray(input.tasks) || input.tasks.length === 0) {
    problems.push('"tasks" must be a non-empty array of { id, prompt, result_schema, depends_on?, max_attempts? }');
  } else if (input.tasks.length > limits.maxTasks) {
    limit(`the workflow has ${input.tasks.length} tasks; at most ${limits.maxTasks} (split it into several workflows)`);
  } else {
    input.tasks.forEach((raw, index) => {
      const task = checkTask(raw, index, limits, problems, limit);
      if (task) tasks.push(task);
    });
  }
  if (problems.length === 0) checkGraph(tasks, problems);
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PROBLEMS);
    if (problems.length > MAX_PROBLEMS) shown.push(`and ${problems.length - MAX_PROBLEMS} more`);
    throw new ControlPlaneError(overLimit ? 'limit_exceeded' : 'invalid_request', `invalid workflow: ${shown.join('; ')}`);
  }
  return { name, tasks, maxParallel };
}

function checkTask(
  raw: unknown,
  index: number,
  limits: WorkflowLimits,
  problems: string[],
  limit: (message: string) => void,
): WorkflowTaskDefinition | undefined {
  const where = `tasks[${index}]`;
  if (!isJSONObject(raw)) {
    problems.push(`${where} must be an object { id, prompt, result_schema, depends_on?, max_attempts? }`);
    return undefined;
  }
  const before = problems.length;
  const unknownKeys = Object.keys(raw).filter((key) => !['id', 'prompt', 'result_schema', 'depends_on', 'max_attempts'].includes(key));
  if (unknownKeys.length > 0) problems.push(`${where} has unknown field ${unknownKeys.map((key) => JSON.stringify(key)).join(', ')}`);
  const id = raw.id;
  if (typeof id !== 'string' || !TASK_ID.test(id)) {
    problems.push(`${where}.id must be 1-64 letters, digits, "_", "-" or "." starting with a letter or digit, not ${JSON.stringify(id) ?? 'nothing'}`);
  }
  const label = typeof id === 'string' && id !== '' ? `task "${id}"` : where;
  const prompt = raw.prompt;
  if (typeof prompt !== 'string' || prompt.trim() === '') problems.push(`${label}: "prompt" must be a non-empty string`);
  else if (prompt.length > limits.maxPromptChars) limit(`${label}: the prompt is ${prompt.length} characters; at most ${limits.maxPromptChars}`);
  const resultSchema = checkSchema(raw.result_schema, label, limits, problems, limit);
  const dependsOn = raw.depends_on ?? [];
  if (!Array.isArray(dependsOn) || !dependsOn.every((dep) => typeof dep === 'string')) problems.push(`${label}: "depends_on" must be an array of task ids`);
  let maxAttempts = limits.defaultMaxAttempts;
  if (raw.max_attempts !== undefined && raw.max_attempts !== null && raw.max_attempts !== 0) {
    if (!Number.isInteger(raw.max_attempts) || (raw.max_attempts as number) < 1) problems.push(`${label}: "max_attempts" must be a positive integer`);
    else if ((raw.max_attempts as number) > limits.maxAttempts) limit(`${label}: "max_attempts" is ${String(raw.max_attempts)}; at most ${limits.maxAttempts}`);
    else maxAttempts = raw.max_attempts as number;
  }
  if (problems.length > before || !resultSchema) return undefined;
  return { id: id as string, prompt: prompt as string, resultSchema, dependsOn: [...new Set(dependsOn as string[])], maxAttempts };
}

function checkSchema(raw: unknown, label: string, limits: WorkflowLimits, problems: string[], limit: (message: string) => void): JSONObject | undefined {
  let schema = raw;
  if (typeof raw === 'string') {
    try {
      schema = JSON.parse(raw);
    } catch (error) {
      problems.push(`${label}: "result_schema" is not valid JSON: ${(error as Error).message}`);
      return undefined;
    }
  }
  if (!isJSONObject(schema)) {
    problems.push(`${label}: "result_schema" must be a JSON Schema object, for example {"type":"object","properties":{...},"required":[...]}`);
    return undefined;
  }
  const size = JSON.stringify(schema).length;
  if (size > limits.maxSchemaChars) {
    limit(`${label}: "result_schema" is ${size} characters of JSON; at most ${limits.maxSchemaChars}`);
    return undefined;
  }
  const compiled = compileJsonSchema(schema);
  if (!compiled.ok) {
    problems.push(`${label}: "result_schema" does not compile: ${compiled.message.replace("the tool's JSON Schema cannot be compiled: ", '')}`);
    return undefined;
  }
  return schema;
}

/** Repeated ids, unknown or self dependencies, and cycles (one is named, as a path). */
function checkGraph(tasks: WorkflowTaskDefinition[], problems: string[]): void {
  const byId = new Map<string, WorkflowTaskDefinition>();
  for (const task of tasks) {
    if (byId.has(task.id)) problems.push(`task id "${task.id}" is used more than once; ids must be unique`);
    byId.set(task.id, task);
  }
  for (const task of tasks) {
    for (const dep of task.dependsOn) {
      if (dep === task.id) problems.push(`task "${task.id}" depends on itself`);
      else if (!byId.has(dep)) problems.push(`task "${task.id}" depends on "${dep}", which is not a task of this workflow`);
    }
  }
  if (problems.length > 0) return;
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    state.set(id, 'visiting');
    path.push(id);
    for (const dep of byId.get(id)!.dependsOn) {
      if (state.get(dep) === 'visiting') return [...path.slice(path.indexOf(dep)), dep];
      if (!state.has(dep)) {
        const cycle = visit(dep);
        if (cycle) return cycle;
      }
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const task of tasks) {
    if (state.has(task.id)) continue;
    const cycle = visit(task.id);
    if (cycle) {
      problems.push(`the dependencies form a cycle: ${cycle.join(' → ')} (each listed task depends on the next); remove one of these depends_on entries`);
      return;
    }
  }
}
