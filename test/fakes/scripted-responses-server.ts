import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResponseItem } from '../../controller/model/responses-model.js';
import { buildResponse, readJsonBody, responseSseEvents, writeJson, writeSse } from '../../controller/model/responses-wire.js';

/** What one scripted step answers. */
export type ScriptReply =
  /**
   * A response with these output items (JSON, or SSE when the request streams); `fields` are set
   * on the response object (e.g. `status: 'incomplete'` with `incomplete_details`), `deltaChars`
   * sizes the SSE deltas.
   */
  | { output: ResponseItem[]; fields?: Record<string, unknown>; deltaChars?: number }
  /** An HTTP error. */
  | { status: number; body: unknown; headers?: Record<string, string> }
  /** Never answers; the request stays open until the client goes away. */
  | { hang: true }
  /** Answers by hand: a stalled or broken response, raw bytes. */
  | { raw: (res: ServerResponse, body: Record<string, unknown>) => void };

/** A step: a fixed reply, or a function of the request body (and its index). */
export type ScriptStep = ScriptReply | ((body: Record<string, unknown>, index: number) => ScriptReply);

/** A scripted Responses API server. */
export interface ScriptedResponsesServer {
  baseURL: string;
  /** Every request body received, in order (including ones answered with errors). */
  requests: Array<Record<string, unknown>>;
  /** Resolves when the server has received `count` requests in total. */
  waitForRequests(count: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts a real HTTP server on 127.0.0.1:0 that answers POST /v1/responses with the scripted steps,
 * one per request in order (a 500 once the script is exhausted), and records every request body.
 */
export async function startScriptedResponsesServer(options: { steps: ScriptStep[] }): Promise<ScriptedResponsesServer> {
  const requests: Array<Record<string, unknown>> = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = createServer((req, res) => {
    readJsonBody(req)
      .then((raw) => {
        const body = raw as Record<string, unknown>;
        const index = requests.length;
        requests.push(body);
        for (const waiter of waiters.filter((w) => requests.length >= w.count)) waiter.resolve();
        const step = options.steps[index];
        const reply: ScriptReply | undefined = typeof step === 'function' ? step(body, index) : step;
        if (!reply) return writeJson(res, 500, { error: { message: `script exhausted at request ${index + 1}` } });
        if ('hang' in reply) return;
        if ('raw' in reply) return reply.raw(res, body);
        if ('status' in reply) return writeJson(res, reply.status, reply.body, reply.headers);
        const response = { ...buildResponse({ model: String(body.model ?? 'scripted'), output: reply.output }), ...reply.fields };
        if (body.stream === true) writeSse(res, responseSseEvents(response, { deltaChars: reply.deltaChars }));
        else writeJson(res, 200, response);
      })
      .catch((error: unknown) => writeJson(res, 400, { error: { message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    waitForRequests(count, signal = AbortSignal.timeout(15_000)) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        signal.addEventListener('abort', () => reject(new Error(`only ${requests.length} of ${count} requests arrived`)), { once: true });
        waiters.push({ count, resolve });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
