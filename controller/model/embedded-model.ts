import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, isJSONObject } from '../../src/index.js';
import { planEmbeddedResponse } from './embedded-plan.js';
import { buildResponse, readJsonBody, responseSseEvents, writeJson, writeSse } from './responses-wire.js';

/** A running embedded model server. */
export interface EmbeddedModel {
  /** The base URL to give the `openai` client, e.g. `http://127.0.0.1:PORT/v1`. */
  baseURL: string;
  /** How many /v1/responses requests it answered. */
  requests(): number;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/** The model name the embedded model reports. */
export const EMBEDDED_MODEL_NAME = 'embedded-scripted';

/**
 * Starts the embedded model: an in-process HTTP server on 127.0.0.1 that speaks the Responses
 * API (`POST /v1/responses`, plain JSON or SSE with the real event names and shapes).
 *
 * It is a SCRIPTED STAND-IN for a model, for demos and tests, not a language model: it plays a
 * fixed plan (write a todo list and list the files; read the README; complete the todos; answer
 * citing what the tools returned), or, when the prompt names a tool ("call greet with name=Ada"),
 * calls that tool (missing required arguments sampled from its schema) and answers with its output; derives its next step from the input items it receives
 * (stateless, like a real model), skips steps whose tool is not offered, and issues independent
 * calls together. The controller reaches it through the real `openai` client over real HTTP.
 *
 * @throws when the port cannot be bound. Aborting `signal` closes the server.
 */
export async function startEmbeddedModel(options: { port?: number; signal?: AbortSignal } = {}): Promise<EmbeddedModel> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || (path !== '/v1/responses' && path !== '/responses')) {
      writeJson(res, 404, { error: { message: `no route ${req.method} ${path}; the embedded model serves POST /v1/responses`, type: 'invalid_request_error' } });
      return;
    }
    readJsonBody(req)
      .then((body) => {
        if (!isJSONObject(body) || !Array.isArray(body.input)) {
          writeJson(res, 400, { error: { message: 'the request body must be a JSON object with an input array', type: 'invalid_request_error' } });
          return;
        }
        count++;
        const output = planEmbeddedResponse(body);
        const response = buildResponse({
          model: typeof body.model === 'string' ? body.model : EMBEDDED_MODEL_NAME,
          output,
          inputChars: JSON.stringify(body.input).length + JSON.stringify(body.tools ?? []).length,
        });
        if (body.stream === true) writeSse(res, responseSseEvents(response));
        else writeJson(res, 200, response);
      })
      .catch((error) => {
        if (!res.headersSent) writeJson(res, 400, { error: { message: `bad request: ${errorMessage(error)}`, type: 'invalid_request_error' } });
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  options.signal?.addEventListener('abort', () => void close(), { once: true });
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}/v1`, requests: () => count, close };
}
