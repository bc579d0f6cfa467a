import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readJsonBody, writeJson } from '../../controller/model/responses-wire.js';

/** One scripted Chat Completions answer: the assistant's text and tool calls, or an HTTP error. */
export type ChatReply =
  | { content?: string; toolCalls?: Array<{ id: string; name: string; arguments: string }>; finishReason?: string }
  | { status: number; body: unknown; headers?: Record<string, string> };

/** A scripted Chat Completions server (real HTTP on 127.0.0.1). */
export interface ScriptedChatServer {
  baseURL: string;
  /** Every request body received, in order. */
  requests: Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * Starts a server that answers `POST /v1/chat/completions` with the scripted replies in order: as
 * one JSON body, or, when the request streams, as SSE chunks the way OpenAI-compatible servers send
 * them (text in pieces, each tool call's arguments in two pieces, the finish reason, a usage chunk
 * when asked, `[DONE]`). A 500 once the script is exhausted.
 */
export async function startScriptedChatServer(options: { replies: Array<ChatReply | ((body: Record<string, unknown>) => ChatReply)> }): Promise<ScriptedChatServer> {
  const requests: Array<Record<string, unknown>> = [];
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || !(req.url ?? '').endsWith('/chat/completions')) return writeJson(res, 404, { error: { message: `no route ${req.method} ${req.url}` } });
    readJsonBody(req)
      .then((raw) => {
        const body = raw as Record<string, unknown>;
        const index = requests.length;
        requests.push(body);
        const step = options.replies[index];
        const reply = typeof step === 'function' ? step(body) : step;
        if (!reply) return writeJson(res, 500, { error: { message: `script exhausted at request ${index + 1}` } });
        if ('status' in reply) return writeJson(res, reply.status, reply.body, reply.headers);
        const id = `chatcmpl-${index + 1}`;
        const calls = reply.toolCalls ?? [];
        const finish = reply.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
        const usage = { prompt_tokens: 100 + index, completion_tokens: 10, total_tokens: 110 + index };
        if (body.stream !== true) {
          return writeJson(res, 200, {
            id,
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: reply.content ?? null, ...(calls.length > 0 ? { tool_calls: calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) } : {}) }, finish_reason: finish }],
            usage,
          });
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        const delta = (value: unknown, finishReason: string | null = null) => send({ id, object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: value, finish_reason: finishReason }] });
        delta({ role: 'assistant', content: '' });
        const text = reply.content ?? '';
        for (let at = 0; at < text.length; at += 7) delta({ content: text.slice(at, at + 7) });
        calls.forEach((call, index) => {
          const half = Math.floor(call.arguments.length / 2);
          delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments.slice(0, half) } }] });
          delta({ tool_calls: [{ index, function: { arguments: call.arguments.slice(half) } }] });
        });
        delta({}, finish);
        if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage) send({ id, object: 'chat.completion.chunk', choices: [], usage });
        res.end('data: [DONE]\n\n');
      })
      .catch((error: unknown) => writeJson(res, 400, { error: { message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
