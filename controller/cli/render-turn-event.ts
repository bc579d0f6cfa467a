import type { TurnEvent } from '../loop/turn-events.js';

function summarize(payload: unknown): string {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

/** One live progress line for a turn event; undefined for events not worth a line. */
export function renderTurnEvent(event: TurnEvent): string | undefined {
  switch (event.type) {
    case 'turn-started':
      return `▶ turn started: ${event.tools} tools (${event.deferredTools} behind tool search), model ${event.model}`;
    case 'model-request':
      return `… asking the model (call ${event.iteration}, ${event.inputItems} input items, ${event.tools} tools)`;
    case 'model-response': {
      const usage = event.usage ? `, ${event.usage.input_tokens ?? '?'} in / ${event.usage.output_tokens ?? '?'} out tokens` : '';
      const ended = event.status ? ` (${event.status}: ${event.reason})` : '';
      return `${event.status ? '✗' : '✓'} model answered: ${event.functionCalls} tool call${event.functionCalls === 1 ? '' : 's'}${usage}${ended}`;
    }
    case 'activity-started':
      return `  → ${event.label}`;
    case 'presentation':
      return `    · ${event.kind} ${summarize(event.payload)}`;
    case 'activity-completed':
      return event.error ? `  ✗ ${event.label || event.name}: ${event.error.code}: ${summarize(event.error.message)}` : `  ✓ ${event.label}`;
    case 'approval-requested':
      return `  ? approval needed: ${event.label || event.name}`;
    case 'approval-decided':
      if (event.decidedBy === 'call-ended') return `  · approval withdrawn: the call ended first`;
      return event.approved ? `  ✓ approved (${event.decidedBy})` : `  ✗ denied (${event.decidedBy})${event.reason ? `: ${summarize(event.reason)}` : ''}`;
    case 'turn-finished':
      return `■ turn finished: ${event.status} after ${event.modelCalls} model call${event.modelCalls === 1 ? '' : 's'}${event.error ? ` (${event.error})` : ''}`;
    default:
      return undefined;
  }
}
