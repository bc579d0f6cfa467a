/** The sidecar's `--help` text (`npm run sidecar -- --help`). */
export const SIDECAR_USAGE = `Usage: npm run sidecar -- --workspace DIR [options]
       node dist/sidecar/main.js --workspace DIR [options]

Serves the agent's tools over gRPC (toolruntime.v1.ToolSidecarService, grpc.health.v1, reflection).
Prints {"event":"listening","address":...,"tokenFile":...} on stdout once it serves; logs JSON lines
on stderr. Every RPC needs "authorization: Bearer <token>": without --token-file a token is generated
at start and written 0600 to the runtime folder ($XDG_RUNTIME_DIR/tools-runtime, else
~/.local/state/tools-runtime/runtime; $TOOLS_RUNTIME_RUNTIME_DIR overrides), where the controller and
the operator's CLI find it by the sidecar's address. The folder and a unix socket the sidecar
listens on are hidden from its commands.
SIGTERM or SIGINT drains (running calls finish, or are aborted after --drain-grace-ms) and exits 0.

Options:
  --workspace DIR             the agent's workspace (required, must exist)
  --listen ADDR               host:port, [::1]:port or unix:/path (default 127.0.0.1:0); without
                              --token-file only loopback or a unix socket (0600)
  --state-dir DIR             the sidecar's own state (default ~/.local/state/tools-runtime/<hash>)
  --token-file F              the token every RPC needs: the first line of F (default: generated)
  --tls-cert F --tls-key F    serve TLS; with --tls-client-ca F, mutual TLS
  --log-level LEVEL           debug | info | warn | error (default info)
  --exit-on-stdin-eof         shut down as on SIGTERM (drain, bounded) when stdin reaches EOF; for a
                              spawning process that holds the write end of a pipe given as stdin, so
                              the sidecar dies with it however it dies (SIGKILL included). stdin
                              must be a pipe or a socket; what is written to it is ignored
  --metrics-listen HOST:PORT  serve Prometheus metrics at http://HOST:PORT/metrics

Limits (positive integers):
  --max-message-bytes N       gRPC message size either way (default 16 MiB)
  --max-arguments-bytes N     larger arguments get arguments_too_large (default 1 MiB)
  --max-result-chars N        longer text parts are cut head and tail (default 100000)
  --call-deadline-ms N        a call's deadline when it gives none (default 600000)
  --max-call-deadline-ms N    cap on a requested deadline (default 3600000)
  --max-concurrent-calls N    calls in flight per turn; more get too_many_calls (default 256)
  --abort-grace-ms N          how long an aborted tool may take to settle (default 2000)
  --drain-grace-ms N          on shutdown, how long running calls may continue (default 10000)
  --max-queued-events N       unsent presentation events one call may have (default 10000)
  --max-client-requests-per-call N
                              reverse requests (control, approval) one call may send in all
                              (default 32)
  --max-pending-client-requests N
                              reverse requests of one turn waiting for a reply at once (default 64)
  --max-client-message-bytes N
                              largest control request sent or client reply accepted (default
                              1 MiB; at most --max-message-bytes)

Sandbox (every process started for the model: commands, skills' MCP calls; see docs/sandbox.md):
  --sandbox MODE              workspace-write (default): all read-only but the workspace, private
                              /tmp, own PID namespace, no capabilities; read-only: the workspace too;
                              off: unconfined, with the sidecar's own rights. Needs bubblewrap
                              (apt-get install bubblewrap): without it, process tools refuse
  --network N                 off (default under a sandbox) | on | allow:HOST,... (host names,
                              *.globs, addresses; through the sidecar's proxy, HTTP_PROXY set)
  --hide PATH                 also hidden from commands and file tools (repeatable); the state
                              folder, token file, TLS key and search key file always are
  --allow-unsandboxed         run_command may ask to run a command outside the sandbox; each such
                              call needs the client's approval
  --limits L                  per agent, all its processes together (docs/sandbox.md, Limits):
                              memory=SIZE,pids=N,cpus=N,tmp=SIZE over the defaults (memory
                              min(4G, half the RAM), pids 1024, no CPU cap, /tmp min(1G, memory/4));
                              off: no bound (commands still go first to the OOM killer)

Commands and tools:
  --env KEY=VALUE             extra environment for commands (repeatable)
  --env-allow NAME            another of the sidecar's variables that commands inherit (repeatable)
  --web-fetch                 offer web_fetch
  --web-allow-private         let the web tools reach private, loopback and link-local addresses
  --web-search-provider P     searxng | brave: offer web_search
  --web-search-url URL        the SearXNG base URL (Brave's API by default for brave)
  --web-search-key-file F     Brave's subscription token (default $BRAVE_API_KEY)
  --brain DIR                 markdown pages for the Brain tools
  --brain-max-pages N, --brain-max-page-bytes N, --brain-max-total-bytes N
                              the Brain's caps
  --skills DIR                skills, one folder each with a SKILL.md
  --tools MODULE              your own tool categories: an ES module path (resolved against the
                              directory npm or the shell ran in) or a package name whose default
                              export is { name, create } or an array of them (repeatable; after
                              the built-in categories, in this order)
  --mcp-servers F             MCP servers whose tools join text turns, deferred, a namespace each
                              ({"mcpServers": {"NAME": {"command": ...} | {"url": ...}}}; docs/mcp.md)

MCP (the tools served to MCP clients; one session = one long text turn; docs/mcp.md):
  --mcp stdio                 serve MCP on stdin/stdout instead of gRPC; exits when stdin ends
  --mcp-listen ADDR           serve MCP (Streamable HTTP) at http://ADDR/mcp beside gRPC; the
                              --listen rules and --token-file apply; a non-loopback Origin gets 403
  --mcp-agent ID              the agent MCP sessions act as (default mcp)
  --mcp-approve MODE          none | destructive | not_read_only (default destructive): calls that
                              need approval, asked by elicitation, denied when the client cannot
  --help                      this text

Exit status: 0 after a drain; 2 on bad usage (with a message on stderr); 1 when it cannot start.`;
