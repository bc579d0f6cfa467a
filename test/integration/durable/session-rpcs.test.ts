// ListSessions, ShowSession and ContinueSession through ControlPlaneService, as a non-Node client
// would use them: a real `controller serve`, a real sidecar, a scripted Responses server.
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { messageItem } from '../../../controller/model/responses-wire.js';
import { ControlPlaneServiceClient, type ShowSessionResponse } from '../../../src/gen/toolruntime/v1/control_plane.js';
import { startScriptedResponsesServer } from '../../fakes/scripted-responses-server.js';
import { startServe } from '../../fixtures/start-serve.js';
import { startSidecar } from '../../fixtures/start-sidecar.js';

const dir = mkdtempSync(join(tmpdir(), 'session-rpcs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sessions through ControlPlaneService', () => {
  it('continues a session twice (the model gets its history), lists and shows it, and refuses another agent', async () => {
    const model = await startScriptedResponsesServer({ steps: [{ output: [messageItem('First answer.')] }, { output: [messageItem('Second answer.')] }] });
    const sidecar = await startSidecar({ args: ['--listen', '127.0.0.1:0', '--workspace', dir, '--state-dir', join(dir, 'state')] });
    const agents = join(dir, 'agents.json');
    writeFileSync(agents, JSON.stringify({ 'agent-a': { address: sidecar.address }, 'agent-b': { address: sidecar.address } }));
    writeFileSync(join(dir, 'token'), 'session-token-1\n');
    const serve = await startServe({ args: ['--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data'), '--agents', agents, '--base-url', model.baseURL, '--token-file', join(dir, 'token')], env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' } });
    const client = new ControlPlaneServiceClient(serve.address, credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set('authorization', 'Bearer session-token-1');
    const call = <T>(method: string, request: object) =>
      new Promise<T>((resolve, reject) =>
        (client as unknown as Record<string, (...args: unknown[]) => void>)[method]!.call(client, request, metadata, (error: ServiceError | null, response: T) => (error ? reject(error) : resolve(response))),
      );
    const settled = async (name: string, turns: number) => {
      for (const until = Date.now() + 60_000; ; ) {
        const shown = await call<ShowSessionResponse>('showSession', { name });
        if (shown.session!.turns >= turns && !shown.session!.running) return shown;
        if (Date.now() > until) throw new Error(`session ${name} did not reach ${turns} turns: ${JSON.stringify(shown.session)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    try {
      const started = await call<{ session: { running: boolean; agentId: string } }>('continueSession', { name: 'api', agentId: 'agent-a', prompt: 'hello' });
      expect(started.session).toMatchObject({ running: true, agentId: 'agent-a' });
      await settled('api', 1);
      await call('continueSession', { name: 'api', agentId: 'agent-a', prompt: 'and again' });
      const shown = await settled('api', 2);
      expect(shown.session).toMatchObject({ name: 'api', turns: 2, lastStatus: 'completed', interrupted: false, title: 'hello' });
      expect(shown.entries.map((entry) => entry.kind)).toEqual(['input', 'model_response', 'turn_end', 'input', 'model_response', 'turn_end']);
      expect(JSON.parse(shown.entries[4]!.itemsJson)).toEqual([expect.objectContaining({ type: 'message', role: 'assistant' })]);
      const users = (model.requests[1]!.input as Array<{ role?: string; content?: Array<{ text: string }> }>).filter((item) => item.role === 'user').map((item) => item.content![0]!.text);
      expect(users).toEqual(['hello', 'and again']);
      const listed = await call<{ sessions: Array<{ name: string; turns: number }> }>('listSessions', { agentId: 'agent-a', limit: 0 });
      expect(listed.sessions).toEqual([expect.objectContaining({ name: 'api', turns: 2 })]);
      const foreign = await call('continueSession', { name: 'api', agentId: 'agent-b', prompt: 'mine now' }).catch((error: ServiceError) => error);
      expect(foreign).toMatchObject({ code: status.PERMISSION_DENIED });
      expect((foreign as ServiceError).details).toContain('is a session of agent "agent-a", not a session of agent "agent-b"');
      const bad = await call('showSession', { name: '../x' }).catch((error: ServiceError) => error);
      expect(bad).toMatchObject({ code: status.INVALID_ARGUMENT });
      const unknown = await call('showSession', { name: 'nobody' }).catch((error: ServiceError) => error);
      expect(unknown).toMatchObject({ code: status.NOT_FOUND });
    } finally {
      client.close();
      await serve.stop('SIGTERM');
      await sidecar.stop('SIGTERM');
      await model.close();
    }
  }, 180_000);
});
