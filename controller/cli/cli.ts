import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { errorMessage, isToolRuntimeError } from '../../src/index.js';
import { createTerminalApprover, denyWithoutTerminal, recordApprovals } from '../approvals/terminal-approver.js';
import { connectCliSidecar, createCliModel } from './cli-services.js';
import type { CliIo } from './cli-io.js';
import { parseCliOptions, USAGE, type CliOptions } from './cli-options.js';
import { runTurn, type TurnOutcome } from '../loop/run-turn.js';
import type { TurnEvent, TurnStatus } from '../loop/turn-events.js';
import { createSidecarClient } from '../sidecar-client/create-sidecar-client.js';
import type { ApproveCallback } from '../sidecar-client/sidecar-types.js';
import { renderTurnEvent } from './render-turn-event.js';
import type { CliConsole } from '../console/cli-console.js';
import { CONSOLE_USAGE, takeConsoleFlags, type ConsoleFlags } from '../console/console-flags.js';
import { createTurnControlPlane } from '../control-plane/cli/turn-control-plane.js';
import { renderRunnerEvent } from '../control-plane/cli/workflow-run-command.js';
import { startControllerTelemetry } from '../telemetry/controller-telemetry.js';
import { formatSessions, openSession, SESSION_USAGE, sessionHistoryEvents, takeSessionFlags, type SessionFlags } from './cli-sessions.js';
import { openControlPlaneStore } from '../control-plane/store/open-control-plane-store.js';
import { stopAtFromEnv } from '../loop/turn-step-seam.js';
import { withTurnFeatures } from './with-turn-features.js';
import { explainSidecarTlsFailure } from './explain-sidecar-failure.js';
import { readFileSync } from 'node:fs';

export type { CliIo } from './cli-io.js';


/** Exit codes of turn statuses other than 0 (completed, terminated) and 1 (any other failure). */
export const EXIT_CODES: Partial<Record<TurnStatus, number>> = { incomplete: 3, model_failed: 4 };

/**
 * The controller CLI: one text turn from one command. Returns the exit code (0 completed, 1 failed
 * with a one-line reason on stderr, 2 bad usage, 3 answer cut off, 4 response failed: `EXIT_CODES`). Everything it starts (the sidecar child, the
 * embedded model, the temporary workspace) is stopped before it returns, also on abort.
 */
export async function runCli(io: CliIo): Promise<number> {
  let options: CliOptions;
  // The web console (controller/console/): `--console [ADDR]` serves this turn's view until Ctrl-C.
  const consoleRun: { flags?: ConsoleFlags; console?: CliConsole } = {};
  let sessionFlags: SessionFlags;
  try {
    const taken = takeConsoleFlags(io.argv);
    if (taken.console) consoleRun.flags = taken.console;
    // --session / --sessions (cli-sessions.ts): taken out before the other flags are parsed.
    const sessions = takeSessionFlags(taken.argv);
    sessionFlags = sessions.flags;
    options = parseCliOptions(sessions.argv, io.env);
  } catch (error) {
    await io.earlySidecar?.close();
    // One line and where the options are: the 40 lines of --help would bury it.
    io.stderr.write(`error: ${errorMessage(error)}\n(npm start -- --help lists the options)\n`);
    return 2;
  }
  if (options.help) {
    await io.earlySidecar?.close();
    io.stdout.write(`${USAGE}\n\nConversations kept in the store (docs/reliability.md):\n${SESSION_USAGE}\n\nThe web console (controller/console/):\n${CONSOLE_USAGE}\n`);
    return 0;
  }
  if (sessionFlags.list) return listSessions(options, io);
  const cleanups: Array<() => Promise<void>> = [];
  const early = io.earlySidecar;
  if (early) cleanups.push(() => early.close());
  const progress = (line: string) => {
    if (!options.quiet) io.stderr.write(`${line}\n`);
  };
  try {
    // Traces and metrics only when OTEL_* or --metrics-listen asks (the sidecar child inherits OTEL_*).
    const telemetry = await startControllerTelemetry({ env: io.env, ...(options.metricsListen !== undefined ? { metricsListen: options.metricsListen } : {}) });
    if (telemetry) cleanups.push(() => telemetry.shutdown());
    if (telemetry?.metricsUrl) progress(`▶ metrics at ${telemetry.metricsUrl}`);
    const outcome = await runOneTurn(options, io, cleanups, progress, consoleRun, sessionFlags);
    const succeeded = outcome.status === 'completed' || outcome.status === 'terminated';
    if (succeeded) io.stdout.write(`${outcome.finalText}\n`);
    else {
      // A cut-off answer is still printed: the part that came, then the reason.
      if (outcome.status === 'incomplete' && outcome.finalText) io.stdout.write(`${outcome.finalText}\n`);
      io.stderr.write(`error: turn ${outcome.status}: ${outcome.error ?? 'no reason given'}\n`);
    }
    if (consoleRun.console && !io.signal.aborted) {
      io.stderr.write(`▶ the turn ended; the console keeps serving at ${consoleRun.console.url} until Ctrl-C\n`);
      await consoleRun.console.serveUntil(io.signal);
    }
    return succeeded ? 0 : (EXIT_CODES[outcome.status] ?? 1);
  } catch (error) {
    const reason = isToolRuntimeError(error, 'aborted') || io.signal.aborted ? 'aborted' : errorMessage(error);
    io.stderr.write(`error: ${reason.split('\n')[0]}\n`);
    return 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  }
}

async function runOneTurn(
  options: CliOptions,
  io: CliIo,
  cleanups: Array<() => Promise<void>>,
  progress: (line: string) => void,
  consoleRun: { flags?: ConsoleFlags; console?: CliConsole } = {},
  sessionFlags: SessionFlags = { list: false, prompted: false },
): Promise<TurnOutcome> {
  const { signal } = io;
  // A session's journal is opened before anything starts: a foreign or damaged one fails at once.
  const session = sessionFlags.session ? await openCliSession(options, sessionFlags, sessionFlags.session, cleanups, progress) : undefined;
  // The model (the SDK's load, the embedded server) starts while the sidecar starts: start-up is on the path.
  const starting = createCliModel(options, cleanups, signal);
  starting.catch(() => {}); // awaited below; a failure surfaces there
  const { address, token } = io.earlySidecar ? await io.earlySidecar.adopt(progress) : await connectCliSidecar({ ...options, hide: consoleRun.flags?.tokenFile ? [consoleRun.flags.tokenFile] : [] }, cleanups, signal, progress);
  const model = await starting;

  let events: NodeJS.WritableStream | undefined;
  if (options.eventsFile) {
    const file = createWriteStream(options.eventsFile);
    events = file;
    cleanups.push(() => new Promise<void>((resolve) => file.end(() => resolve())));
  }
  let onEvent = (event: TurnEvent) => {
    events?.write(`${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`);
    const line = renderTurnEvent(event);
    if (line) progress(line);
  };
  const turnId = randomUUID();
  // Ctrl-C, or the console's cancel button (which ends this turn only).
  const cancelled = new AbortController();
  const turnSignal = AbortSignal.any([signal, cancelled.signal]);
  if (consoleRun.flags) {
    // Loaded only with --console: plain turns never load the HTTP server.
    const { startCliConsole } = await import('../console/cli-console.js');
    const started = await startCliConsole({ flags: consoleRun.flags, agentId: options.agentId, sidecarAddress: address, ...(token ? { sidecarToken: token } : {}), dataDir: options.dataDir, ...(options.database ? { database: options.database } : {}) });
    consoleRun.console = started;
    cleanups.push(() => started.close());
    // A session's ended turns go to the page first, as turns of their own: the console shows its history.
    for (const past of session ? sessionHistoryEvents(sessionFlags.session!, session.journal.records) : []) {
      const feed = started.onEvent({ turnId: `session:${sessionFlags.session}#${past.number}`, agentId: options.agentId, label: `${sessionFlags.session} #${past.number}: ${past.prompt.slice(0, 100)}` }, () => {});
      for (const event of past.events) feed(event);
    }
    onEvent = started.onEvent({ turnId, agentId: options.agentId, label: options.prompt.slice(0, 120) }, onEvent);
    started.onCancel(turnId, () => cancelled.abort(new Error('cancelled from the console')));
    // The one line that carries the token (as Jupyter prints its URL); later mentions show the bare URL.
    io.stderr.write(`▶ console at ${started.linkWithToken}\n  (the token is in ${started.tokenFile}; the page keeps it, so later visits need only ${started.url})\n`);
  }

  const ca = options.caFile ? readFileSync(options.caFile) : undefined;
  const channel = createSidecarClient({ address, ...(token ? { token } : {}), ...(ca ? { tls: { ca } } : {}) });
  cleanups.push(async () => channel.close());
  // --brain / --enable-brain and --skill reach this turn and the workflow tasks it starts alike.
  const client = withTurnFeatures(channel, options.turnFeatures);
  // The control-plane tools: answered here, as this turn's agent; a workflow the turn starts runs in
  // this process, and the CLI waits for it after the answer.
  const controlPlane = createTurnControlPlane({
    dataDir: options.dataDir,
    ...(options.database ? { database: options.database } : {}),
    agentId: options.agentId,
    model,
    client,
    turnOptions: { toolSearch: options.toolSearch, flattenNamespaces: options.flattenNamespaces, maxModelCalls: options.maxModelCalls },
    onEvent: (event) => progress(renderRunnerEvent(event)),
  });
  cleanups.push(() => controlPlane.close());
  const approvalPolicy = options.approve === 'never' ? undefined : { mode: options.approve === 'all' ? ('not_read_only' as const) : ('destructive' as const) };
  let approve: ApproveCallback | undefined;
  if (approvalPolicy) {
    const isTerminal = io.isTerminal ?? process.stdin.isTTY === true;
    if (consoleRun.console) {
      approve = recordApprovals(consoleRun.console.approverFor({ turnId, agentId: options.agentId }), onEvent, 'console');
    } else if (isTerminal) {
      const terminal = createTerminalApprover({ input: io.stdin ?? process.stdin, output: io.stderr });
      cleanups.push(async () => terminal.close());
      approve = recordApprovals(terminal.approve, onEvent, 'terminal');
    } else {
      approve = recordApprovals(denyWithoutTerminal, onEvent, 'no-terminal');
    }
  }
  const turn = await client
    .openTurn(
      { agentId: options.agentId, turnId, kind: 'text', controlPlane: true, ...(approvalPolicy ? { approvalPolicy } : {}) },
      { signal: turnSignal, onClientRequest: controlPlane.onClientRequest, ...(approve ? { approve } : {}) },
    )
    .catch(async (error: unknown) => {
      // gRPC says "No connection established" whatever the cause: name TLS when it is the cause.
      const tls = options.sidecar && isToolRuntimeError(error, 'sidecar_unavailable') ? await explainSidecarTlsFailure(address, { ...(ca ? { ca } : {}) }) : undefined;
      throw tls ? new Error(tls, { cause: error }) : error;
    });
  try {
    const run = () =>
      runTurn({
        model,
        turn,
        prompt: options.prompt,
        toolSearch: options.toolSearch,
        nativeTools: options.nativeTools,
        flattenNamespaces: options.flattenNamespaces,
        maxModelCalls: options.maxModelCalls,
        signal: turnSignal,
        onEvent,
        turnId,
        ...(options.instructions !== undefined ? { baseInstructions: options.instructions } : {}),
        ...(session ? { journal: session.journal } : {}),
        ...(session && io.env.TOOLS_RUNTIME_TEST_STOP_AT ? { stopAt: stopAtFromEnv(io.env, (line) => io.stderr.write(line))! } : {}),
      });
    // A session cut short finishes its turn first; a new prompt then continues after it.
    const first = await run();
    const resumedOnly = session?.interrupted && !sessionFlags.prompted;
    if (!session?.interrupted || resumedOnly || (first.status !== 'completed' && first.status !== 'terminated')) return first;
    return await run();
  } finally {
    if (turnSignal.aborted) turn.abort();
    else await turn.close({ timeoutMs: 5_000 });
    io.onTurnEnded?.();
    await controlPlane.reportStartedRuns(signal, progress);
  }
}

/** `--sessions`: the stored conversations, newest first. */
async function listSessions(options: CliOptions, io: CliIo): Promise<number> {
  await io.earlySidecar?.close();
  try {
    const store = await openControlPlaneStore({ dataDir: options.dataDir, ...(options.database ? { database: options.database } : {}) });
    try {
      io.stdout.write(formatSessions(await store.turns.list({ kind: 'session', limit: 200 })));
    } finally {
      await store.close();
    }
    return 0;
  } catch (error) {
    io.stderr.write(`error: ${errorMessage(error).split('\n')[0]}\n`);
    return 1;
  }
}

/** Opens `--session NAME`'s journal in the store (closed with the run) and says what this run does with it. */
async function openCliSession(options: CliOptions, flags: SessionFlags, name: string, cleanups: Array<() => Promise<void>>, progress: (line: string) => void) {
  const store = await openControlPlaneStore({ dataDir: options.dataDir, ...(options.database ? { database: options.database } : {}) });
  cleanups.push(() => store.close());
  const session = await openSession(store, name, options.agentId, options.prompt, flags.prompted);
  if (session.interrupted) progress(`▶ session ${name}: its last turn was cut short; resuming it from the journal`);
  else if (session.turns > 0) progress(`▶ session ${name}: continuing after ${session.turns} turn${session.turns === 1 ? '' : 's'}`);
  else progress(`▶ session ${name}: new, kept in ${store.location}`);
  return session;
}
