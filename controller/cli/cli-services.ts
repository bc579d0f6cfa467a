import type { CliOptions } from './cli-options.js';
import { EMBEDDED_MODEL_NAME, startEmbeddedModel } from '../model/embedded-model.js';
import type { ResponsesModel } from '../model/responses-model.js';

// The sidecar half lives in its own light module (npm start loads it first); re-exported for the
// callers that start both halves.
export { connectCliSidecar, type CliSidecar } from './cli-sidecar.js';

/**
 * The model the CLI flags describe: the embedded scripted model (started here, closed by the
 * cleanup) or a Responses API server, with the retry-after cap and the stream idle timeout. The
 * openai SDK is loaded here, on first use.
 *
 * @throws what starting the embedded model throws; `aborted` when `signal` aborts.
 */
export async function createCliModel(options: CliOptions, cleanups: Array<() => Promise<void>>, signal: AbortSignal): Promise<ResponsesModel> {
  if (options.api === 'chat') {
    // Chat Completions (--api chat): never the embedded model (the options refuse that).
    const { createOpenAIChatModel } = await import('../model/openai-chat-model.js');
    return createOpenAIChatModel({
      model: options.model,
      apiKey: options.apiKey ?? 'no-key',
      ...(options.baseURL ? { baseURL: options.baseURL } : {}),
      stream: options.stream,
      maxRetryAfterMs: options.maxRetryAfterMs,
      streamIdleTimeoutMs: options.streamIdleTimeoutMs,
    });
  }
  const loadingModel = import('../model/openai-responses-model.js');
  loadingModel.catch(() => {}); // awaited below; a failure surfaces there
  let baseURL = options.baseURL;
  if (options.embedded) {
    const embedded = await startEmbeddedModel({ signal });
    cleanups.push(() => embedded.close());
    baseURL = embedded.baseURL;
  }
  const { createOpenAIResponsesModel } = await loadingModel;
  // Node's fetch (its bundled undici, ~20-40 ms to compile) loads on first use: load it now, while
  // the sidecar starts up in its own process, not in the turn's first model request.
  new Headers();
  return createOpenAIResponsesModel({
    model: options.embedded ? EMBEDDED_MODEL_NAME : options.model,
    // Servers of one's own (vLLM, a gateway on loopback) often need no key, but the SDK refuses to
    // start without one: send a placeholder, and let a server that does check answer 401.
    apiKey: options.embedded ? 'embedded-no-key' : (options.apiKey ?? 'no-key'),
    ...(baseURL ? { baseURL } : {}),
    stream: options.stream,
    maxRetryAfterMs: options.maxRetryAfterMs,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs,
    includeEncryptedReasoning: !options.embedded && (!baseURL || new URL(baseURL).hostname === 'api.openai.com'),
  });
}
