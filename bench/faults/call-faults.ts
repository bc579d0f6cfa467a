// Calls that go wrong in every way a model or a client can make them, on one Turn, and fuzzed
// argument strings: every call must get exactly one result and the stream must end OK.
import type { ToolSidecarServiceClient } from '../../src/gen/toolruntime/v1/sidecar.js';
import { createRandom, markedCommand } from './process-scan.js';
import { openTrackedTurn, type TrackedCall, type TurnTally } from './tracked-turn.js';

/** How many calls of each kind went out. */
export type CallMix = Record<string, number>;

const IN_FLIGHT = 48;

/**
 * Sends `count` calls on one Turn, `IN_FLIGHT` at a time: valid calls, invalid and oversized
 * arguments, unknown tools (some with huge names), duplicate ids, cancels at random moments and
 * short deadlines on long sleeps and long commands (their processes carry `marker`). Resolves
 * the tally once the half-closed stream ended, and the mix sent.
 */
export async function runMixedCalls(options: {
  client: ToolSidecarServiceClient;
  count: number;
  seed: number;
  marker: string;
  maxArgumentsBytes: number;
  /** How long the stream may take to end after the last call was sent. Default 120 s. */
  endTimeoutMs?: number;
}): Promise<{ tally: TurnTally; mix: CallMix }> {
  const { client, count, marker } = options;
  const random = createRandom(options.seed);
  const turn = await openTrackedTurn(client, 'fault-mixed');
  const mix: CallMix = {};
  const usedIds: string[] = [];
  const kindOf = new Map<string, string>();
  const cancels: Array<Promise<void>> = [];
  let lastKind = '';
  const count1 = (kind: string) => {
    lastKind = kind;
    mix[kind] = (mix[kind] ?? 0) + 1;
  };
  for (let index = 0; index < count; index++) {
    await turn.pendingBelow(IN_FLIGHT);
    const callId = `m${index}`;
    const roll = random.next();
    let call: TrackedCall;
    if (roll < 0.35) {
      call = { callId, name: 'noop', argumentsJson: '{}' };
      count1('valid noop');
    } else if (roll < 0.45) {
      call = { callId, name: 'echo', argumentsJson: JSON.stringify({ index, text: 'x'.repeat(random.int(2_000)) }) };
      count1('valid echo');
    } else if (roll < 0.53) {
      call = { callId, name: 'sleep', argumentsJson: JSON.stringify({ ms: random.int(30) }) };
      count1('valid sleep');
    } else if (roll < 0.6) {
      call = { callId, name: 'sleep', argumentsJson: JSON.stringify({ ms: 10_000 }) };
      turn.send(call);
      count1('cancelled sleep');
      const delay = random.int(40);
      cancels.push(new Promise((resolve) => setTimeout(resolve, delay)).then(() => turn.cancel(callId, 'fault suite cancel')));
      kindOf.set(callId, 'cancelled sleep');
      continue;
    } else if (roll < 0.65) {
      call = { callId, name: 'sleep', argumentsJson: JSON.stringify({ ms: 10_000 }), deadlineMs: 10 + random.int(100) };
      count1('sleep past its deadline');
    } else if (roll < 0.66) {
      call = { callId, name: 'run_command', argumentsJson: JSON.stringify({ command: markedCommand(marker, 'sleep 30 & sleep 30; wait') }), deadlineMs: 100 + random.int(200) };
      count1('command past its deadline');
    } else if (roll < 0.75) {
      call = { callId, name: 'sleep', argumentsJson: random.pick(['{"ms": "soon"}', '{"ms": -1}', '{"ms":', 'not json at all', '[1,2,3]', '{"ms": 1, "extra": true']) };
      count1('invalid arguments');
    } else if (roll < 0.78) {
      call = { callId, name: 'echo', argumentsJson: JSON.stringify({ blob: 'b'.repeat(options.maxArgumentsBytes + 16) }) };
      count1('oversized arguments');
    } else if (roll < 0.85) {
      call = { callId, name: random.next() < 0.1 ? 'n'.repeat(64 * 1024) : `no_such_tool_${random.int(100)}`, argumentsJson: '{}' };
      count1('unknown tool');
    } else if (roll < 0.9 && usedIds.length > 0) {
      call = { callId: random.pick(usedIds), name: 'noop', argumentsJson: '{}' };
      count1('duplicate call id');
    } else if (roll < 0.95) {
      call = { callId, name: 'lookup', namespace: 'fixture_ns', argumentsJson: JSON.stringify({ key: `k${index}` }) };
      count1('valid namespaced');
    } else {
      call = { callId, name: 'throw', argumentsJson: JSON.stringify({ message: `thrown ${index}` }) };
      count1('tool that throws');
    }
    turn.send(call);
    kindOf.set(call.callId, lastKind);
    if (usedIds.length < 1_000) usedIds.push(call.callId);
  }
  await Promise.all(cancels);
  const tally = await turn.end(options.endTimeoutMs ?? 120_000);
  for (const lost of tally.lostCalls) lost.kind = kindOf.get(lost.callId);
  return { tally, mix };
}

/** Mutations of valid arguments: cut, spliced, duplicated, nested, odd characters and numbers. */
function fuzzArguments(random: ReturnType<typeof createRandom>): string {
  const seeds = ['{"ms": 1}', '{"key": "k"}', '{"text": "hello", "n": [1, 2, {"a": null}]}', '{}', '{"path": "README.md"}'];
  let text = random.pick(seeds);
  const steps = 1 + random.int(4);
  for (let step = 0; step < steps; step++) {
    const at = random.int(text.length + 1);
    switch (random.int(9)) {
      case 0:
        text = text.slice(0, at);
        break;
      case 1:
        text = text.slice(0, at) + random.pick(['{', '}', '[', ']', '"', ',', ':', '\\', '\u0000', '\ud800', 'NaN', 'undefined', "'", '```json\n']) + text.slice(at);
        break;
      case 2:
        text = text.slice(0, at) + text.slice(at + 1 + random.int(5));
        break;
      case 3:
        text = '['.repeat(random.int(400)) + text;
        break;
      case 4:
        text = JSON.stringify(text);
        break;
      case 5:
        text = text.slice(0, at) + String.fromCharCode(random.int(0x10000)) + text.slice(at);
        break;
      case 6:
        text = text.replace(/\d+/, random.pick(['1e400', '-0', '9007199254740993', '0x10', '1_000']));
        break;
      case 7:
        text = `Here are the arguments: ${text} hope that helps`;
        break;
      default:
        text = text + text.slice(0, at);
    }
  }
  return text;
}

/**
 * Sends `count` fuzzed argument strings to tools of every kind (a deadline keeps any that
 * happen to be valid short), and tallies the results.
 */
export async function runFuzzedArguments(options: { client: ToolSidecarServiceClient; count: number; seed: number }): Promise<TurnTally> {
  const random = createRandom(options.seed);
  const turn = await openTrackedTurn(options.client, 'fault-fuzz');
  const tools: Array<{ name: string; namespace?: string }> = [{ name: 'echo' }, { name: 'sleep' }, { name: 'noop' }, { name: 'lookup', namespace: 'fixture_ns' }, { name: 'read_file' }, { name: 'todo_read' }];
  for (let index = 0; index < options.count; index++) {
    await turn.pendingBelow(IN_FLIGHT);
    const tool = random.pick(tools);
    turn.send({ callId: `f${index}`, name: tool.name, namespace: tool.namespace, argumentsJson: fuzzArguments(random), deadlineMs: 1_000 });
  }
  return turn.end(120_000);
}
