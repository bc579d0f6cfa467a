import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import { registerLocalServer, type LocalServerRegistration } from '../src/local-servers.js';
import { createJsonLogger, type Logger } from '../src/logger.js';
import { errorMessage, isToolRuntimeError } from '../src/errors.js';
import type { Catalogs } from './categories/category.js';
import type { SidecarConfig } from './sidecar-config.js';
import { openStdinLifeline, type StdinLifeline } from './open-stdin-lifeline.js';
import { loadSidecarArgs, sidecarHelpRequested, type SidecarCliOptions } from './parse-sidecar-args.js';
import { createSidecarServer } from './server.js';
import { loadToolModules, withToolCategories, type LoadedToolCategory } from './tool-modules.js';
import type { McpHttpListener } from './mcp/mcp-http-listener.js';
import { SIDECAR_USAGE } from './sidecar-usage.js';
import { startSidecarTelemetry, type SidecarTelemetry } from './telemetry/sidecar-telemetry.js';

export { parseSidecarArgs, sidecarHelpRequested, SidecarUsageError, type SidecarCliOptions } from './parse-sidecar-args.js';

/**
 * Runs the sidecar CLI: parses `argv`, serves, prints `{"event":"listening","address":...}` on
 * stdout once it serves, logs JSON lines on stderr, and drains then exits 0 on SIGTERM or SIGINT,
 * or with `--exit-on-stdin-eof` when stdin reaches EOF (then bounded: exit 1 if the drain hangs).
 * `--help` prints the usage and exits 0. A usage error prints a message and exits 2; a failure to
 * start exits 1.
 */
export async function runSidecarCli(
  argv: string[],
  options: {
    /** The catalogs; `warm()`, when present, is called once the server listens (lazy-catalogs.ts). */
    createCatalogs: (config: SidecarConfig, options: { logger: Logger }) => Catalogs & { close?(): void | Promise<void>; warm?(): void };
  },
): Promise<void> {
  if (sidecarHelpRequested(argv)) {
    process.stdout.write(`${SIDECAR_USAGE}\n`);
    process.exit(0);
  }
  let parsed: SidecarCliOptions;
  let lifeline: StdinLifeline | undefined;
  try {
    parsed = await loadSidecarArgs(argv);
    // Checked before anything starts: a stdin that is no pipe is a usage error, not a later surprise.
    if (parsed.exitOnStdinEof) lifeline = openStdinLifeline();
    mkdirSync(parsed.config.stateDir, { recursive: true });
  } catch (error) {
    process.stderr.write(`tools-runtime sidecar: ${errorMessage(error)}\n`);
    process.exit(isToolRuntimeError(error) ? 2 : 1);
  }
  const logger = createJsonLogger({ level: parsed.logLevel, fields: { component: 'sidecar' } });
  // Users' modules load before the sidecar listens: a --tools that cannot load stops the start-up
  // with its name, rather than a sidecar that serves without the tools it was asked for.
  let toolCategories: LoadedToolCategory[] = [];
  try {
    toolCategories = await loadToolModules(parsed.toolModules, { baseDir: process.env.INIT_CWD ?? process.cwd() });
    if (toolCategories.length > 0) {
      logger.info('tool categories loaded', { categories: toolCategories.map((category) => ({ name: category.name, module: category.module, workflowTask: category.workflowTask === true })) });
    }
  } catch (error) {
    process.stderr.write(`tools-runtime sidecar: ${errorMessage(error)}\n`);
    process.exit(2);
  }
  // Telemetry (traces, metrics) only when OTEL_* or --metrics-listen asks: otherwise no OpenTelemetry module loads.
  let telemetry: SidecarTelemetry | undefined;
  try {
    telemetry = await startSidecarTelemetry({ env: process.env, ...(parsed.metricsListen !== undefined ? { metricsListen: parsed.metricsListen } : {}) });
  } catch (error) {
    process.stderr.write(`tools-runtime sidecar: telemetry: ${errorMessage(error)}\n`);
    process.exit(isToolRuntimeError(error) ? 2 : 1);
  }
  if (telemetry?.metricsUrl) {
    // Under --mcp stdio, stdout carries only the protocol.
    (parsed.mcp?.stdio ? process.stderr : process.stdout).write(`${JSON.stringify({ event: 'metrics', url: telemetry.metricsUrl })}\n`);
    logger.info('metrics listening', { url: telemetry.metricsUrl });
  }
  const catalogs = withToolCategories(options.createCatalogs(parsed.config, { logger }), toolCategories, { logger });
  const mcp = parsed.mcp && { catalogs, config: parsed.config, logger, agentId: parsed.mcp.agentId, approvalPolicy: parsed.mcp.approvalPolicy };
  if (mcp && parsed.mcp?.stdio) {
    // MCP on stdin/stdout instead of the gRPC port: the client's exit (stdin's end) ends the sidecar.
    // Loaded only here: the MCP SDK (about 250 KB built) is not on a plain sidecar's start-up path.
    const { serveMcpStdio } = await import('./mcp/serve-mcp-stdio.js');
    await serveMcpStdio({
      ...mcp,
      onEnd: (why) => {
        logger.info('mcp client gone; exiting', { why });
        void Promise.resolve(catalogs.close?.())
          .then(() => telemetry?.shutdown())
          .finally(() => process.exit(0));
      },
    });
    const exit = () => void Promise.resolve(catalogs.close?.()).finally(() => process.exit(0));
    process.on('SIGTERM', exit);
    process.on('SIGINT', exit);
    catalogs.warm?.();
    reportSandbox(parsed.config, logger, false);
    return;
  }
  // A sidecar always requires a token: a command with --network on reaches loopback, and another
  // agent's command can reach a socket path it sees, so "local" is not "trusted". Without
  // --token-file one is generated here and written 0600 to the runtime folder once we listen.
  const token = parsed.token ?? randomBytes(32).toString('base64url');
  const server = createSidecarServer({
    catalogs,
    config: parsed.config,
    logger,
    token,
    tls: parsed.tls,
    ...(telemetry ? { telemetry } : {}),
  });
  let address: string;
  try {
    address = await server.listen(parsed.listen);
  } catch (error) {
    // One plain line a person reads first ("port 7401 is in use ..."), then the structured log.
    process.stderr.write(`tools-runtime sidecar: ${errorMessage(error)}\n`);
    logger.error('could not listen', { address: parsed.listen, error: errorMessage(error) });
    process.exit(isToolRuntimeError(error) ? 2 : 1);
  }
  let mcpHttp: McpHttpListener | undefined;
  if (mcp && parsed.mcp?.listen) {
    try {
      const { startMcpHttpListener } = await import('./mcp/mcp-http-listener.js');
      mcpHttp = await startMcpHttpListener({ ...mcp, address: parsed.mcp.listen, maxBodyBytes: parsed.config.limits.maxMessageBytes, token });
    } catch (error) {
      logger.error('could not serve MCP', { address: parsed.mcp.listen, error: errorMessage(error) });
      process.exit(isToolRuntimeError(error) ? 2 : 1);
    }
  }
  if (address.startsWith('unix:')) {
    // Only this user may connect (the umask's mode could let the group in); the token still applies.
    chmodSync(address.slice('unix:'.length), 0o600);
  }
  let registration: LocalServerRegistration | undefined;
  try {
    registration = registerLocalServer({
      kind: 'sidecar',
      address,
      ...(parsed.tokenFile ? { tokenFile: parsed.tokenFile } : { token }),
      workspace: parsed.config.workspace,
      ...(mcpHttp ? { mcpUrl: mcpHttp.url } : {}),
    });
  } catch (error) {
    if (!parsed.tokenFile) {
      // Fail closed: a generated token that nobody can find would lock every client out silently.
      process.stderr.write(`tools-runtime sidecar: cannot write the generated token to the runtime folder: ${errorMessage(error)}; give --token-file FILE, or set TOOLS_RUNTIME_RUNTIME_DIR to a folder only you can write\n`);
      process.exit(1);
    }
    // With --token-file whoever started us holds the token; only the lookup by address is lost.
    logger.warn('not listed in the runtime folder: clients must be given the token file', { error: errorMessage(error) });
  }
  let stopping = false;
  const stop = (why: { signal: NodeJS.Signals } | { lifeline: string }) => {
    if (stopping) return;
    stopping = true;
    logger.info('draining', why);
    Promise.all([server.close(), mcpHttp?.close()]).then(
      async () => {
        // Closing the catalogs stops the Brain worker (it finishes the batch in hand).
        await catalogs.close?.();
        await telemetry?.shutdown();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('drain failed', { error: errorMessage(error) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop({ signal: 'SIGTERM' }));
  process.on('SIGINT', () => stop({ signal: 'SIGINT' }));
  lifeline?.watch((why) => {
    // Nobody is left to escalate to SIGKILL, so the drain gets a hard bound of its own: its grace,
    // the abort grace, and time for the catalogs and telemetry to close.
    const { drainGraceMs, abortGraceMs } = parsed.config.limits;
    setTimeout(() => {
      logger.error('drain did not finish after stdin closed; exiting', { boundMs: drainGraceMs + abortGraceMs + 10_000 });
      process.exit(1);
    }, drainGraceMs + abortGraceMs + 10_000).unref();
    stop({ lifeline: why });
  });
  // Only now, with the handlers in place: a spawner that signals as soon as it reads this line
  // gets a drain, not the default action of SIGTERM.
  if (mcpHttp) process.stdout.write(`${JSON.stringify({ event: 'mcp-listening', url: mcpHttp.url })}\n`);
  process.stdout.write(`${JSON.stringify({ event: 'listening', address, tokenFile: registration?.tokenFile ?? parsed.tokenFile })}\n`);
  catalogs.warm?.();
  // After the listening line: the probe (a bwrap run, some milliseconds) is off the start-up path;
  // a command that comes first waits for the same probe.
  reportSandbox(parsed.config, logger, true);
}

/**
 * The sandbox's start-up line: on stdout (unless stdout is the MCP protocol's) and in the log. While
 * it is unavailable the probe is retried with backoff; each failure is logged with when the next
 * try is, and a recovery prints a new sandbox line (the controller shows it) and logs it.
 */
function reportSandbox(config: SidecarConfig, logger: Logger, toStdout: boolean): void {
  // Loaded here, after the listening line: the sandbox's modules (bwrap's argv, the proxy, the
  // limits) are not on the start-up path. The process tools wait for the same probe.
  void Promise.all([import('./sandbox-report.js'), import('./categories/computer/sandbox/sandbox-probe.js')]).then(async ([{ describeProbe, sandboxReport }, { sandboxProber }]) => {
    const report = await sandboxReport(config);
    if (toStdout) process.stdout.write(`${JSON.stringify(report)}\n`);
    const { event: _event, ...fields } = report;
    if (!report.ok) logger.error(`sandbox unavailable (retrying in ${report.retryInS ?? '?'} s: ${report.cause}): run_command and every process-starting tool refuse each call`, fields);
    else if (report.mode === 'off') logger.warn('sandbox off (--sandbox off)', fields);
    else logger.info('sandbox ready', fields);
    if (report.ok || report.mode === 'off') return;
    const stop = sandboxProber().onChange((probe) => {
      const next = { ...describeProbe(probe, report.mode as 'read-only' | 'workspace-write', report.network), limitsMechanism: report.limitsMechanism, limits: report.limits };
      const { event: _ignored, ...nextFields } = next;
      if (!next.ok) {
        logger.warn(`sandbox unavailable (retrying in ${next.retryInS ?? '?'} s: ${next.cause})`, nextFields);
        return;
      }
      stop();
      logger.info('sandbox ready after a retry', nextFields);
      if (toStdout) process.stdout.write(`${JSON.stringify(next)}\n`);
    });
  }).catch((error: unknown) => {
    // The process tools load the same modules and refuse their calls with this error.
    logger.error('the sandbox could not be checked: process tools refuse their calls', { error: errorMessage(error) });
  });
}
