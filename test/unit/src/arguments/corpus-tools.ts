// Real tools the argument tests share: a typical five-field non-strict tool, a strict todo tool, a
// tool whose every field is optional, and a raw JSON Schema tool.
import { z } from 'zod';
import { defineWorkerTool, textResult } from '../../../../src/index.js';

export const writeFileSchema = z.object({
  path: z.string().min(1),
  content: z.string(),
  mode: z.enum(['create', 'append', 'overwrite']).default('create'),
  executable: z.boolean().optional(),
  tags: z.array(z.string()).optional(),
});

export const writeFile = defineWorkerTool({
  name: 'write_file',
  description: 'Writes a file.',
  schema: writeFileSchema,
  execute: async (params) => textResult(`wrote ${params.path}`),
});

export const todoSchema = z.object({
  todos: z.array(
    z.object({
      id: z.number().int(),
      title: z.string(),
      status: z.enum(['pending', 'in_progress', 'completed']),
      note: z.string().optional(),
    }),
  ),
  merge: z.boolean().optional(),
});

export const todo = defineWorkerTool({
  name: 'todo',
  description: 'Replaces the todo list.',
  strict: true,
  schema: todoSchema,
  execute: async (params) => textResult(`${params.todos.length} todos`),
});

export const listFiles = defineWorkerTool({
  name: 'list_files',
  description: 'Lists a directory.',
  schema: z.object({ dir: z.string().default('.'), hidden: z.boolean().optional() }),
  execute: async (params) => textResult(params.dir),
});

export const rawCounter = defineWorkerTool({
  name: 'count',
  description: 'Counts up to a number.',
  strict: true,
  jsonSchema: {
    type: 'object',
    properties: { count: { type: 'integer', minimum: 1, maximum: 10 }, label: { type: ['string', 'null'] } },
    required: ['count', 'label'],
    additionalProperties: false,
  },
  execute: async () => textResult('counted'),
});
