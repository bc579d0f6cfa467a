// A client process the fault suite kills: opens a Turn on argv[2], starts a long command whose
// processes carry the marker argv[3], prints `started` once the command runs, then waits forever.
import { markedCommand } from './process-scan.js';
import { createFaultClient, openTrackedTurn } from './tracked-turn.js';

const [address, marker] = process.argv.slice(2);
if (!address || !marker) {
  process.stderr.write('usage: vanishing-client ADDRESS MARKER\n');
  process.exit(2);
}
const turn = await openTrackedTurn(createFaultClient(address), 'fault-vanishing-client');
turn.send({ callId: 'long', name: 'run_command', argumentsJson: JSON.stringify({ command: markedCommand(marker, "echo ready; sh -c 'sleep 300 & sleep 300; wait'"), timeout_ms: 600_000 }) });
const waitUntil = Date.now() + 30_000;
while (Date.now() < waitUntil && !turn.events('long').some((event) => event?.$case === 'presentation')) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
process.stdout.write('started\n');
setInterval(() => {}, 60_000);
