import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ToolRuntimeError, defineWorkerTool, textResult, type WorkerAgentTool } from '../../src/index.js';
import type { CategoryContext } from './category.js';

/** The status of one todo item. */
export type TodoStatus = 'pending' | 'in_progress' | 'completed';

/** One item of an agent's todo list. */
export interface TodoItem {
  id: string;
  content: string;
  status: TodoStatus;
}

/** Per-agent todo lists, kept across turns: in memory, persisted as JSON under a folder. */
export interface TodoStore {
  /** The agent's current list (a copy); empty when it has none. */
  read(agentId: string): TodoItem[];
  /**
   * Replaces the agent's whole list after checking it, then persists it atomically (temp file +
   * rename).
   *
   * @throws ToolRuntimeError `invalid_arguments` on duplicate ids or more than one item in progress.
   */
  write(agentId: string, todos: TodoItem[]): TodoItem[];
}

/**
 * Creates the todo store over `dir` (created when missing). Each agent's list lives in
 * `dir/todos/<sha256(agentId) prefix>.json`, read lazily on first use.
 */
export function createTodoStore(options: { dir: string }): TodoStore {
  const folder = join(options.dir, 'todos');
  const lists = new Map<string, TodoItem[]>();
  const fileOf = (agentId: string) => join(folder, `${createHash('sha256').update(agentId).digest('hex').slice(0, 32)}.json`);

  const load = (agentId: string): TodoItem[] => {
    const cached = lists.get(agentId);
    if (cached) return cached;
    let list: TodoItem[] = [];
    try {
      const parsed = JSON.parse(readFileSync(fileOf(agentId), 'utf8')) as { todos?: unknown };
      const checked = z.array(todoItemSchema).safeParse(parsed.todos);
      if (checked.success) list = checked.data;
    } catch {
      // no list yet (or an unreadable one): start empty
    }
    lists.set(agentId, list);
    return list;
  };

  return {
    read: (agentId) => load(agentId).map((item) => ({ ...item })),
    write(agentId, todos) {
      checkTodos(todos);
      const list = todos.map((item) => ({ id: item.id, content: item.content, status: item.status }));
      mkdirSync(folder, { recursive: true });
      const file = fileOf(agentId);
      const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
      writeFileSync(temporary, `${JSON.stringify({ agentId, todos: list }, null, 2)}\n`);
      renameSync(temporary, file);
      lists.set(agentId, list);
      return list.map((item) => ({ ...item }));
    },
  };
}

const todoItemSchema = z.object({
  id: z.string().min(1).describe('A stable identifier of the item, unique within the list.'),
  content: z.string().min(1).describe('What to do, in one short sentence.'),
  status: z.enum(['pending', 'in_progress', 'completed']),
});

function checkTodos(todos: TodoItem[]): void {
  const seen = new Set<string>();
  for (const item of todos) {
    if (seen.has(item.id)) {
      throw new ToolRuntimeError('invalid_arguments', `todo ids must be unique: "${item.id}" appears more than once`);
    }
    seen.add(item.id);
  }
  const active = todos.filter((item) => item.status === 'in_progress');
  if (active.length > 1) {
    throw new ToolRuntimeError(
      'invalid_arguments',
      `at most one todo may be in_progress, but ${active.length} are: ${active.map((item) => `"${item.id}"`).join(', ')}`,
    );
  }
}

const mark: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[~]', completed: '[x]' };

function summarise(todos: TodoItem[]): string {
  if (todos.length === 0) return 'The todo list is empty.';
  const done = todos.filter((item) => item.status === 'completed').length;
  const lines = todos.map((item) => `${mark[item.status]} ${item.id}: ${item.content}`);
  return `Todo list: ${done}/${todos.length} done.\n${lines.join('\n')}`;
}

const plural = (count: number) => `${count} item${count === 1 ? '' : 's'}`;

/**
 * The todo category: `todo_write` (sequential; replaces the whole list and emits `todo.updated`)
 * and `todo_read` (parallel, read-only). The list belongs to the turn's agent.
 */
export function createTodoTools(context: CategoryContext, store: TodoStore): WorkerAgentTool[] {
  const agentId = context.turn.agentId;
  const todoWrite = defineWorkerTool({
    name: 'todo_write',
    description:
      'Replace your whole todo list for this task. Send every item each time (id, content, status). ' +
      'At most one item may be in_progress; ids must be unique. Use it to plan multi-step work and track progress.',
    schema: z.object({ todos: z.array(todoItemSchema).describe('The complete new list, in order.') }),
    executionMode: 'sequential',
    describeActivity: ({ todos }) => `Updating the todo list (${plural(todos.length)})`,
    describeCompletedActivity: ({ todos }) => {
      const done = todos.filter((item) => item.status === 'completed').length;
      return `Updated the todo list: ${done}/${todos.length} done`;
    },
    async execute({ todos }, { emit }) {
      const list = store.write(agentId, todos);
      emit({ kind: 'todo.updated', payload: { todos: list } });
      return textResult(summarise(list), { details: { todos: list } });
    },
  });
  const todoRead = defineWorkerTool({
    name: 'todo_read',
    description: 'Read your current todo list (kept across turns).',
    schema: z.object({}),
    executionMode: 'parallel',
    isReadOnly: true,
    describeActivity: () => 'Reading the todo list',
    describeCompletedActivity: (_params, result) => {
      const todos = (result.details as { todos?: TodoItem[] } | undefined)?.todos ?? [];
      return `Read the todo list (${plural(todos.length)})`;
    },
    async execute() {
      const list = store.read(agentId);
      return textResult(summarise(list), { details: { todos: list } });
    },
  });
  return [todoWrite, todoRead];
}
