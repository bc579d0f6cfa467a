import { startScriptedResponsesServer, type ScriptReply, type ScriptedResponsesServer } from './scripted-responses-server.js';

/** One request the model received, read back. */
export interface SeenRequest {
  /** The turn's user prompt (the first user message's text). */
  prompt: string;
  /** The function tool names offered (namespaced ones as `namespace.name`). */
  tools: string[];
  /** Whether this request continues a turn (its input ends with tool outputs). */
  continuation: boolean;
  /** The tool outputs in the input, in order. */
  outputs: string[];
}

/** A Responses server whose answers the prompts script, for turns a controller runs on its own. */
export interface ScriptedAgentModel {
  baseURL: string;
  seen: SeenRequest[];
  /** The first requests of turns whose prompt contains `text` (each turn counts once). */
  turnsWith(text: string): SeenRequest[];
  /** Resolves when `count` turns whose prompt contains `text` have started. */
  waitForTurns(text: string, count: number, timeoutMs?: number): Promise<void>;
  /** Lets every request waiting on a `HANG-UNTIL-RELEASED` prompt get answered from now on. */
  release(): void;
  close(): Promise<void>;
}

const message = (text: string) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });

/**
 * Starts a scripted Responses server on 127.0.0.1 that plays a turn from its prompt:
 * - a prompt containing `HANG-FOREVER` is never answered (until the client goes away);
 *   `HANG-UNTIL-RELEASED`, not until `release()`; `HANG-ONCE`, not in its first turn (by first line);
 * - a workflow task turn (offered `submit_result`) submits `{"result": {"task": <its first line>}}`;
 * - each `CALL name {json}` line of the prompt becomes a function call, all in the turn's first
 *   response (parallel); the next response answers `done: <prompt's first line>` with the outputs;
 * - anything else answers `done: <first line>` at once.
 */
export async function startScriptedAgentModel(): Promise<ScriptedAgentModel> {
  const seen: SeenRequest[] = [];
  const waiters: Array<() => void> = [];
  let released = false;
  const hangOnce = new Set<string>();
  const reply = (body: Record<string, unknown>): ScriptReply => {
    const input = (body.input as Array<Record<string, unknown>>) ?? [];
    const user = input.find((item) => item.type === 'message' && item.role === 'user');
    const content = user?.content;
    const prompt = typeof content === 'string' ? content : Array.isArray(content) ? content.map((part: { text?: string }) => part.text ?? '').join('') : '';
    const tools: string[] = [];
    for (const tool of (body.tools as Array<Record<string, unknown>>) ?? []) {
      if (tool.type === 'function') tools.push(String(tool.name));
      if (tool.type === 'namespace') for (const child of tool.tools as Array<{ name: string }>) tools.push(`${String(tool.name)}.${child.name}`);
    }
    const outputs = input.filter((item) => item.type === 'function_call_output').map((item) => String(item.output));
    const continuation = input.at(-1)?.type === 'function_call_output';
    seen.push({ prompt, tools, continuation, outputs });
    for (const wake of waiters) wake();
    const firstLine = prompt.split('\n')[0] ?? '';
    if (continuation) return { output: [message(`done: ${firstLine}\n${outputs.join('\n')}`)] as never };
    if (prompt.includes('HANG-FOREVER')) return { hang: true };
    if (prompt.includes('HANG-UNTIL-RELEASED') && !released) return { hang: true };
    if (prompt.includes('HANG-ONCE') && !hangOnce.has(firstLine)) {
      hangOnce.add(firstLine);
      return { hang: true };
    }
    if (tools.includes('submit_result')) {
      const args = JSON.stringify({ result: { task: firstLine } });
      return { output: [{ type: 'function_call', call_id: `call_${seen.length}`, name: 'submit_result', arguments: args }] as never };
    }
    const calls = [...prompt.matchAll(/^CALL (\S+) (.*)$/gm)].map((match, index) => ({
      type: 'function_call',
      call_id: `call_${seen.length}_${index}`,
      name: match[1]!,
      arguments: match[2]!,
    }));
    if (calls.length > 0) return { output: calls as never };
    return { output: [message(`done: ${firstLine}`)] as never };
  };
  const server: ScriptedResponsesServer = await startScriptedResponsesServer({ steps: Array.from({ length: 10_000 }, () => reply) });
  const turnsWith = (text: string) => seen.filter((request) => !request.continuation && request.prompt.includes(text));
  return {
    baseURL: server.baseURL,
    seen,
    turnsWith,
    waitForTurns(text, count, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (turnsWith(text).length < count) return false;
          clearTimeout(timer);
          resolve();
          return true;
        };
        const timer = setTimeout(() => reject(new Error(`only ${turnsWith(text).length} of ${count} turns with "${text}" started`)), timeoutMs);
        if (!check()) waiters.push(check);
      });
    },
    release() {
      released = true;
    },
    close: () => server.close(),
  };
}
