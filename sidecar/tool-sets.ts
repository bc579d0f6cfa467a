import type { Catalogs } from './categories/category.js';
import { createTodoStore, createTodoTools } from './categories/todo.js';
import type { SidecarConfig } from './config.js';

/**
 * The sidecar's two ordered catalogs, as in the seed: explicit and ordered, no discovery. If a
 * tool's creator is in the list (and returns it for the turn), the tool is available; if not, not.
 * Sidecar-lifetime state (the todo store, indexes, caches) is made here once and shared by turns.
 */
export function createCatalogs(config: SidecarConfig): Catalogs {
  const todoStore = createTodoStore({ dir: config.stateDir });
  return {
    text: [
      (context) => createTodoTools(context, todoStore),
    ],
    workflowTask: [],
  };
}
