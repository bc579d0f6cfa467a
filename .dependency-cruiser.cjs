/**
 * The project's layering, as import rules checked in `npm test` (`npm run lint:deps`). A violation
 * prints the rule's name and its `comment`: why the rule exists. docs/architecture.md explains them.
 * test/unit/layering-rules.test.ts plants a violation of each rule and proves it fails.
 */

/**
 * Where the sidecar may start a process: the sandbox module (its one start function, through which
 * every tool's process goes, its probe of bubblewrap, the limits' probe and the process-group
 * reaper's supervisor).
 */
const PROCESS_STARTERS = '^sidecar/categories/computer/sandbox/';

/** The sandbox module: the one way to start a process, knowing no tool and no category. */
const SANDBOX = '^sidecar/categories/computer/sandbox/';

/** The one module through which tools reach control-plane messages. */
const CONTROL_MESSAGES = '^sidecar/categories/control/control-messages\\.ts$';

/** The controller's two CLI folders: flags, output, process wiring. */
const CLI = '^controller/(cli|control-plane/cli)/';

/** The controller's entry points (package.json "bin"): wiring only, the CLI's one way in. */
const CONTROLLER_ENTRIES = '^controller/(main|control-plane-main)\\.ts$';

/** Transport and generated code, as the control plane's domain must not see them. */
const TRANSPORT = '^(src/gen/|src/grpc-server/|node_modules/@grpc/)';

module.exports = {
  forbidden: [
    {
      name: 'library-knows-no-process',
      comment:
        'src/ is the library both processes (and users) import: it must not depend on the sidecar or the controller. ' +
        'Code both processes need goes in src/ (e.g. src/grpc-server/), never in one process\'s folder.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(sidecar|controller)/' },
    },
    {
      name: 'public-api-exports-no-server',
      comment:
        'src/index.ts is the public API of the tool library: it exports no gRPC server machinery. ' +
        'src/grpc-server/ is shared by the two processes, internal to this package.',
      severity: 'error',
      from: { path: '^src/index\\.ts$' },
      to: { path: '^src/grpc-server/' },
    },
    {
      name: 'controller-not-into-sidecar',
      comment:
        'The two processes meet only through the proto and the library: the controller never imports sidecar code. ' +
        'Move what both need to src/.',
      severity: 'error',
      from: { path: '^controller/' },
      to: { path: '^sidecar/' },
    },
    {
      name: 'sidecar-not-into-controller',
      comment:
        'The two processes meet only through the proto and the library: the sidecar never imports controller code. ' +
        'Move what both need to src/.',
      severity: 'error',
      from: { path: '^sidecar/' },
      to: { path: '^controller/' },
    },
    {
      name: 'tools-see-no-transport',
      comment:
        'Tools (sidecar/categories/) never see grpc-js, generated proto code or the sidecar\'s gRPC layer, so the wire can change without touching a tool. ' +
        'Control-plane messages are domain types: reach them through sidecar/categories/control/control-messages.ts.',
      severity: 'error',
      from: { path: '^sidecar/categories/', pathNot: CONTROL_MESSAGES },
      to: { path: '^(src/gen/|src/grpc-server/|sidecar/grpc/|node_modules/@grpc/)' },
    },
    {
      name: 'control-messages-only-control-plane',
      comment:
        'control-messages.ts is the tools\' one door to generated code, and it opens on the control-plane messages only ' +
        '(src/gen/toolruntime/v1/control_plane.ts): never the sidecar protocol, grpc-js or the gRPC layer.',
      severity: 'error',
      from: { path: CONTROL_MESSAGES },
      to: { path: '^(src/gen/(?!toolruntime/v1/control_plane\\.ts$)|src/grpc-server/|sidecar/grpc/|node_modules/@grpc/)' },
    },
    {
      name: 'tools-start-no-process',
      comment:
        'A tool never calls child_process itself: it starts processes through the sandbox (sidecar/categories/computer/sandbox/start-process.ts), ' +
        'so no tool can bypass the sandbox (and the reaping of its process group) by accident.',
      severity: 'error',
      from: { path: '^(src|sidecar)/', pathNot: PROCESS_STARTERS },
      // Naming child_process's types (a ChildProcess handed over by the start function) starts nothing.
      to: { dependencyTypes: ['core'], dependencyTypesNot: ['type-only'], path: '^(node:)?child_process$' },
    },
    {
      name: 'sandbox-knows-no-tool',
      comment:
        'sidecar/categories/computer/sandbox/ starts, confines, limits and kills every process for the model: it imports only itself, the library (src/) and Node, ' +
        'never a tool, a category (not even its configuration: callers hand it a policy) or the rest of the sidecar, so every category uses it alike and a change to a tool cannot weaken it. ' +
        'What a category knows (its configuration, the agent) goes into the ProcessPolicy it passes (categories/process-policy.ts).',
      severity: 'error',
      from: { path: SANDBOX },
      to: { path: '^sidecar/', pathNot: SANDBOX },
    },
    {
      name: 'control-plane-domain-knows-no-transport',
      comment:
        'controller/control-plane/domain/ is the control plane\'s logic (workflow runner, scheduler, job runner, validation, stored approvals, errors): ' +
        'it names no generated proto type, no grpc-js and nothing of grpc/ or the console, so the gRPC server, the sidecar\'s Turn stream, the console and the CLI drive one logic. ' +
        'Proto mapping goes in grpc/ (to-proto-*.ts, from-proto-*.ts).',
      severity: 'error',
      from: { path: '^controller/control-plane/domain/' },
      to: { path: [TRANSPORT, '^controller/control-plane/grpc/', '^controller/console/'] },
    },
    {
      name: 'control-plane-store-below-domain',
      comment:
        'controller/control-plane/store/ keeps the domain\'s records on SQLite or PostgreSQL: of the controller it imports only itself and domain/ (ControlPlaneError), ' +
        'never the gRPC layer, the CLI, the loop or generated code, so either database is one layer that everything above opens the same way.',
      severity: 'error',
      from: { path: '^controller/control-plane/store/' },
      to: { path: ['^controller/', TRANSPORT], pathNot: '^controller/control-plane/(store|domain)/' },
    },
    {
      name: 'control-plane-domain-owns-its-store-port',
      comment:
        'The domain defines what it keeps and asks of a store (its records and the ControlPlaneStore interface live in domain/); ' +
        'store/ implements that for both databases. The domain never imports store/: the CLI opens a store and hands it to the runners.',
      severity: 'error',
      from: { path: '^controller/control-plane/domain/' },
      to: { path: '^controller/control-plane/store/' },
    },
    {
      name: 'store-written-once',
      comment:
        'The store\'s logic is written once (controller/control-plane/store/*.ts) against Kysely: it names no database driver and neither dialect\'s folder. ' +
        'What differs per database (the runner, the claims, the migrations) lives in store/sqlite/ or store/postgres/, and those two never import each other.',
      severity: 'error',
      from: { path: '^controller/control-plane/store/([^/]+\\.ts)$', pathNot: '^controller/control-plane/store/open-control-plane-store\\.ts$' },
      to: { path: ['^controller/control-plane/store/(sqlite|postgres)/', '^node_modules/(better-sqlite3|pg)/'] },
    },
    {
      name: 'store-dialects-apart',
      comment:
        'store/sqlite/ and store/postgres/ are the two databases\' own parts of the one store: neither imports the other, so what they share is in store/ itself, written once.',
      severity: 'error',
      from: { path: '^controller/control-plane/store/(sqlite|postgres)/' },
      to: { path: '^controller/control-plane/store/(sqlite|postgres)/', pathNot: '^controller/control-plane/store/$1/' },
    },
    {
      name: 'cli-only-from-entries',
      comment:
        'The CLI folders (controller/cli/, controller/control-plane/cli/) parse flags, print to a terminal and wire a process: ' +
        'only the entry points (controller/main.ts, controller/control-plane-main.ts) and the CLI itself import them, ' +
        'so no domain, store, gRPC, console or library code depends on flags or terminal output (grpc/ never imports cli/; cli/ starts grpc/).',
      severity: 'error',
      from: { pathNot: [CLI, CONTROLLER_ENTRIES] },
      to: { path: CLI },
    },
    {
      name: 'composed-config-only-at-start-up',
      comment:
        'sidecar/sidecar-config.ts composes every category\'s part of the configuration (web, Brain, skills, MCP servers), so it names every category\'s types: ' +
        'only the start-up imports it. The gRPC layer, the turn and the categories read sidecar-limits.ts and categories/category-config.ts; ' +
        'a category gets its own part where tool-sets.ts composes the catalogs.',
      severity: 'error',
      from: { path: '^sidecar/(categories|turn|grpc)/' },
      to: { path: '^sidecar/sidecar-config\\.ts$' },
    },
    {
      name: 'no-circular',
      comment:
        'Circles (type-only imports included) make a module impossible to understand, test or load alone. ' +
        'Move the shared type to a module of its own that both import.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a circle through types is still a circle for the reader.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // node_modules is not followed but must not be excluded: an excluded module vanishes from the
    // graph with every import of it, and the grpc-js clause of tools-see-no-transport never fired.
    exclude: { path: '^dist/' },
  },
};
