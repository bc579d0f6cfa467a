import { createJsonLogger, errorMessage, type Logger } from '../../../../src/index.js';
import { sidecarSessionTurns } from './sidecar-session-turns.js';
import { createSessionOperations } from '../../grpc/session-operations.js';
import { stopAtFromEnv } from '../../../loop/turn-step-seam.js';
import type { ControlReply, ControlRequest } from '../../../../src/gen/toolruntime/v1/control_plane.js';
import { startEmbeddedModel, EMBEDDED_MODEL_NAME } from '../../../model/embedded-model.js';
import { createOpenAIResponsesModel } from '../../../model/openai-responses-model.js';
import type { ResponsesModel } from '../../../model/responses-model.js';
import { answerControlRequest, type ControlHooks } from '../../grpc/answer-control-request.js';
import { createApprovalOperations } from '../../grpc/approval-operations.js';
import { registerLocalServer } from '../../../../src/local-servers.js';
import { controlTokenPath, generateControlToken, makeDataDirPrivate, readTokenFile, removeTokenFile, writeTokenFile } from '../../grpc/control-token.js';
import { createControlPlaneServer } from '../../grpc/control-plane-server.js';
import { JobRunner } from '../../domain/jobs/job-runner.js';
import { Scheduler } from '../../domain/schedules/scheduler.js';
import { openControlPlaneStore } from '../../store/open-control-plane-store.js';
import { sidecarTaskTurns } from '../../domain/workflows/sidecar-task-turns.js';
import { WorkflowRunner } from '../../domain/workflows/workflow-runner.js';
import { AgentSidecars } from './agent-sidecars.js';
import { readAgentsFile } from './read-agents-file.js';
import { parseServeOptions, SERVE_USAGE, type ServeOptions } from './serve-options.js';
import { sidecarJobTurns } from './sidecar-job-turns.js';
import { CONSOLE_USAGE, takeConsoleFlags, type ConsoleFlags } from '../../../console/console-flags.js';
import { TurnFeed } from '../../../console/turn-feed.js';

/** What `serve` needs from its process. */
export interface ServeIo {
  argv: string[];
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** SIGTERM / SIGINT: stop taking work, let running turns finish within the grace, then return 0. */
  signal: AbortSignal;
}

const creates = new Set<NonNullable<ControlRequest['request']>['$case']>(['startWorkflow', 'createSchedule', 'startJob']);

/**
 * `controller serve`: opens the store, starts (or connects to) each agent's sidecar, runs the
 * scheduler and the job runner (jobs a killed controller left running are run again), serves
 * ControlPlaneService, prints `{"event":"listening","address":...}` on stdout and runs until
 * `io.signal` aborts. Then it stops the scheduler and the server, lets running turns finish for
 * `--grace-ms`, aborts the rest (they stay running in the store and resume at the next start), stops
 * what it started and returns 0. Returns 2 on bad usage, 1 (with a one-line reason) when it cannot
 * start. Logs are JSON lines on stderr.
 */
export async function runServe(io: ServeIo): Promise<number> {
  let options: ServeOptions;
  let consoleFlags: ConsoleFlags | undefined; // the web console (controller/console/)
  try {
    const taken = takeConsoleFlags(io.argv);
    consoleFlags = taken.console;
    options = parseServeOptions(taken.argv, io.env);
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error)}\n(npm run controller -- serve --help lists the options)\n`);
    return 2;
  }
  if (options.help) {
    io.stdout.write(`${SERVE_USAGE}\n\nThe web console (controller/console/):\n${CONSOLE_USAGE}\n`);
    return 0;
  }
  const logger = createJsonLogger({ stream: io.stderr, fields: { component: 'controller' } });
  const cleanups: Array<() => Promise<void>> = [];
  try {
    // Every RPC needs a token, loopback included: without --token-file one is generated for this
    // run and written (0600) under the data folder, where local clients find it.
    const token = options.tokenFile ? await readTokenFile(options.tokenFile) : generateControlToken();
    const agents = await readAgentsFile(options.agentsFile);
    if (await makeDataDirPrivate(options.dataDir)) logger.warn('the data folder was open to other users: narrowed it to 0700', { dataDir: options.dataDir });
    const store = await openControlPlaneStore({ dataDir: options.dataDir, claimExpirySeconds: options.claimExpirySeconds, logger, ...(options.database ? { database: options.database } : {}) });
    cleanups.push(() => store.close());
    // The model's commands must not read the store or any token (the generated one is under the data folder).
    const hide = [options.dataDir, ...(options.tokenFile ? [options.tokenFile] : []), ...(consoleFlags?.tokenFile ? [consoleFlags.tokenFile] : [])];
    const sidecars = await AgentSidecars.start({ agents, hide, signal: io.signal, logger });
    cleanups.push(() => sidecars.close());
    const model = await createModel(options, cleanups);

    // The kill tests' seam (turn-step-seam.ts): absent unless TOOLS_RUNTIME_TEST_STOP_AT is set.
    const stopAt = stopAtFromEnv(process.env, (line) => process.stderr.write(line));
    const turnOptions = { toolSearch: options.model.toolSearch, flattenNamespaces: options.model.flattenNamespaces, maxModelCalls: options.model.maxModelCalls, ...(stopAt ? { stopAt } : {}) };
    const feed = consoleFlags ? new TurnFeed() : undefined;
    const onTurnEvent = feed ? { onTurnEvent: feed.record.bind(feed) } : {};
    const workflowRunner = new WorkflowRunner({
      store,
      model,
      openTaskTurn: sidecarTaskTurns((agentId) => sidecars.clientFor(agentId)),
      turnOptions,
      logger,
      maxRunningTasks: options.maxRunningTasks,
      // Claims are leases on the rows, renewed while a turn runs: a dead controller's work runs elsewhere after this.
      leaseMs: options.claimExpirySeconds * 1000,
      attemptTimeoutMs: options.taskTimeoutMs,
      ...onTurnEvent,
    });
    const hooks: ControlHooks = { workflowRunner };
    const jobRunner = new JobRunner({
      jobs: store.jobs,
      agentIds: sidecars.agentIds,
      maxRunningPerAgent: options.maxRunningJobsPerAgent,
      leaseMs: options.claimExpirySeconds * 1000,
      logger,
      runTurn: sidecarJobTurns({
        clientFor: (agentId) => sidecars.clientFor(agentId),
        instructionsFor: (agentId) => sidecars.instructionsFor(agentId),
        ...onTurnEvent,
        model,
        store,
        hooks: () => hooks,
        ...(options.approve !== 'never'
          ? { approvals: { policy: { mode: options.approve === 'all' ? 'not_read_only' : 'destructive' }, expiresAfterMs: options.approvalTimeoutMs } }
          : {}),
        turnOptions,
        maxTurnMs: options.jobTimeoutMs,
        logger,
      }),
    });
    const scheduler = new Scheduler({ schedules: store.schedules, agentIds: sidecars.agentIds, onFired: () => jobRunner.wake(), logger });
    // Should starting fail half-way, the loops stop before the store and the sidecars go (all idempotent).
    cleanups.push(() => workflowRunner.close(), () => jobRunner.close({ graceMs: 0, abortGraceMs: 2_000 }), () => scheduler.close());
    hooks.schedulesAndJobs = {
      onScheduleChanged: () => scheduler.wake(),
      onJobQueued: () => jobRunner.wake(),
      onJobCancelled: (jobId, reason) => jobRunner.abort(jobId, reason),
    };
    const known = new Set(sidecars.agentIds);
    const answer = async (request: ControlRequest): Promise<ControlReply> => {
      const value = request.request;
      if (value && creates.has(value.$case) && value.value.agentId !== '' && !known.has(value.value.agentId)) {
        const message = `agent "${value.value.agentId}" is not in this controller's agents file (${[...known].join(', ')}): its work would never run`;
        return { reply: { $case: 'error', value: { code: 'invalid_request', message } } };
      }
      return answerControlRequest({ store, request, hooks });
    };
    // ContinueSession's turns (sidecar-session-turns.ts): stopped before the store closes; cut short, they resume later.
    const sessionTurns = sidecarSessionTurns({ clientFor: (agentId) => sidecars.clientFor(agentId), model, store, hooks: () => hooks, turnOptions, logger });
    cleanups.push(() => sessionTurns.close());
    const server = createControlPlaneServer({
      answer,
      approvals: createApprovalOperations(store.approvals),
      sessions: createSessionOperations({ turns: store.turns, agentIds: sidecars.agentIds, runner: sessionTurns }),
      token,
      ...(store.watchHealth ? { watchStoreHealth: store.watchHealth.bind(store) } : {}),
      logger,
    });
    cleanups.push(() => server.close({ graceMs: 1_000 }));
    const address = await server.listen(options.listen);
    const tokenFile = options.tokenFile ?? controlTokenPath({ dataDir: options.dataDir, kind: 'control-plane', address });
    if (!options.tokenFile) {
      await writeTokenFile(tokenFile, token);
      cleanups.push(() => removeTokenFile(tokenFile, token));
    }
    // Listed in the runtime folder, so the operator's CLI finds the token by address whatever
    // --data-dir this process was given (`approvals list --address ADDR`, `controller servers`).
    try {
      const listed = registerLocalServer({ kind: 'control-plane', address, tokenFile, ...(options.database ? {} : { dataDir: options.dataDir }) });
      cleanups.push(async () => listed.remove());
    } catch (error) {
      logger.warn('not listed in the runtime folder: clients need --token-file or --data-dir', { error: errorMessage(error) });
    }
    if (consoleFlags && feed) {
      const { startServeConsole } = await import('../../../console/serve-console.js'); // loaded only with --console
      const web = await startServeConsole({ flags: consoleFlags, feed, store, agents: () => sidecars.sidecarAddresses(), answer, serveToken: token, generated: !options.tokenFile, dataDir: options.dataDir, logger });
      cleanups.push(() => web.close());
    }
    const { resumed } = await jobRunner.start();
    // Claims the ready tasks of every run of these agents: runs started here or by another process
    // (an npm start turn, another controller), and attempts whose runner is gone.
    const runningRuns = (await store.workflows.listRuns({ state: 'running', limit: 10_000 })).filter((run) => known.has(run.agentId)).length;
    workflowRunner.serveAgents(known);
    scheduler.start();
    // `store` says which store this is (a SQLite file, or the PostgreSQL URL without its password); dataDir only for SQLite.
    io.stdout.write(`${JSON.stringify({ event: 'listening', address, tokenFile, store: store.location, ...(options.database ? {} : { dataDir: options.dataDir }), agents: sidecars.agentIds, resumedJobs: resumed, runningWorkflowRuns: runningRuns })}\n`);
    logger.info('controller serving', { address, store: store.location, agents: sidecars.agentIds, tokenFile });

    await new Promise<void>((resolve) => {
      if (io.signal.aborted) resolve();
      io.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    logger.info('shutting down: no new work; running turns get the grace', { graceMs: options.graceMs, runningJobs: jobRunner.runningCount });
    // Draining: health says NOT_SERVING for the whole grace while the server still answers.
    server.drain();
    await scheduler.close();
    // Job and workflow task turns get the grace; task turns still running then are aborted and their
    // attempts handed back (logged interrupted, not counted against max_attempts) for another controller.
    await Promise.all([workflowRunner.close({ graceMs: options.graceMs }), jobRunner.close({ graceMs: options.graceMs })]);
    await server.close({ graceMs: 1_000 });
    logger.info('controller stopped');
    return 0;
  } catch (error) {
    const reason = io.signal.aborted ? 'interrupted while starting' : errorMessage(error).split('\n')[0];
    io.stderr.write(`error: ${reason}\n`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => logger.warn('cleanup failed', { error: errorMessage(error) }));
  }
}

async function createModel(options: ServeOptions, cleanups: Array<() => Promise<void>>): Promise<ResponsesModel> {
  const settings = options.model;
  if (settings.api === 'chat') {
    const { createOpenAIChatModel } = await import('../../../model/openai-chat-model.js');
    return createOpenAIChatModel({ model: settings.model, apiKey: settings.apiKey ?? 'no-key', ...(settings.baseURL ? { baseURL: settings.baseURL } : {}), stream: settings.stream });
  }
  let baseURL = settings.baseURL;
  if (settings.embedded) {
    const embedded = await startEmbeddedModel();
    cleanups.push(() => embedded.close());
    baseURL = embedded.baseURL;
  }
  return createOpenAIResponsesModel({
    model: settings.embedded ? EMBEDDED_MODEL_NAME : settings.model,
    apiKey: settings.embedded ? 'embedded-no-key' : (settings.apiKey ?? 'no-key'),
    ...(baseURL ? { baseURL } : {}),
    stream: settings.stream,
    includeEncryptedReasoning: !settings.embedded && (!baseURL || new URL(baseURL).hostname === 'api.openai.com'),
  });
}
