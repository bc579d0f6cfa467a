// One function per view of the console; each returns a fresh element from the state.
import { clock, duration, h, svg, text } from './dom.js';

const badge = (value, kind = value) => h('span', { class: `badge badge-${String(kind).replace(/[^a-z_-]/gi, '')}` }, value);

export function agentsView(state) {
  if (state.agents.length === 0) return h('p', { class: 'empty' }, 'No agents.');
  return h('table', {},
    h('thead', {}, h('tr', {}, h('th', {}, 'agent'), h('th', {}, 'sidecar'), h('th', {}, 'health'), h('th', {}, 'turns here'))),
    h('tbody', {}, state.agents.map((agent) => h('tr', { 'data-agent': agent.agentId },
      h('td', {}, agent.agentId),
      h('td', {}, agent.address ?? '—'),
      h('td', {}, badge(agent.health)),
      h('td', {}, String(state.turns.filter((turn) => turn.agentId === agent.agentId).length)),
    ))));
}

/** Folds a turn's events into model requests and calls, in order. */
function timelineOf(turn) {
  const rows = [];
  const calls = new Map();
  let request;
  for (const { event, time } of turn.events) {
    switch (event.type) {
      case 'model-request':
        request = { kind: 'model', iteration: event.iteration, time, inputItems: event.inputItems, tools: event.tools };
        rows.push(request);
        break;
      case 'model-response':
        if (request && request.iteration === event.iteration) Object.assign(request, { usage: event.usage, functionCalls: event.functionCalls, doneAt: time });
        break;
      case 'activity-started': {
        const known = calls.get(event.callId);
        if (known) {
          Object.assign(known, { label: event.label, state: 'running' });
          break;
        }
        const call = { kind: 'call', callId: event.callId, name: event.name, namespace: event.namespace, label: event.label, time, presentations: [], state: 'running' };
        calls.set(event.callId, call);
        rows.push(call);
        break;
      }
      case 'presentation':
        calls.get(event.callId)?.presentations.push(event);
        break;
      case 'approval-requested': {
        // The sidecar asks before the call starts: the call's row begins here.
        let call = calls.get(event.callId);
        if (!call) {
          call = { kind: 'call', callId: event.callId, name: event.name, namespace: event.namespace, label: event.label, time, presentations: [] };
          calls.set(event.callId, call);
          rows.push(call);
        }
        call.state = 'waiting for approval';
        break;
      }
      case 'approval-decided': {
        const call = calls.get(event.callId);
        if (call) Object.assign(call, { state: 'running', approval: `${event.approved ? 'approved' : 'denied'} (${event.decidedBy})${event.reason ? `: ${event.reason}` : ''}` });
        break;
      }
      case 'activity-completed': {
        const call = calls.get(event.callId);
        if (call) Object.assign(call, { state: event.error ? 'failed' : 'done', label: event.label, error: event.error, durationMs: event.durationMs, repairs: event.repairs, output: event.output });
        break;
      }
      case 'turn-finished':
        rows.push({ kind: 'finished', status: event.status, finalText: event.finalText, error: event.error, time });
        break;
    }
  }
  return rows;
}

function presentationView(event) {
  const payload = event.payload;
  if (event.kind === 'command.output' && payload && typeof payload.text === 'string') {
    return h('pre', { class: `output output-${payload.stream === 'stderr' ? 'stderr' : 'stdout'}` }, payload.text);
  }
  if (event.kind === 'todo.updated' && payload && Array.isArray(payload.todos)) {
    return h('ul', { class: 'todos-inline' }, payload.todos.map((todo) => h('li', {}, badge(todo.status ?? '?'), ' ', todo.content ?? text(todo))));
  }
  return h('div', { class: 'presentation' }, h('span', { class: 'kind' }, event.kind), h('pre', {}, text(payload)));
}

function callRow(call) {
  return h('li', { class: `call call-${call.state.replace(/ /g, '-')}`, 'data-call': call.callId },
    h('div', { class: 'call-head' },
      h('span', { class: 'label' }, call.label),
      h('span', { class: 'tool' }, call.namespace ? `${call.namespace}.${call.name}` : call.name),
      call.durationMs !== undefined ? h('span', { class: 'dur' }, duration(call.durationMs)) : badge(call.state, call.state.replace(/ /g, '-')),
      call.error ? badge(call.error.code, 'error') : null,
    ),
    call.approval ? h('div', { class: 'note' }, `approval: ${call.approval}`) : null,
    call.repairs && call.repairs.length ? h('div', { class: 'note' }, `repairs: ${call.repairs.join('; ')}`) : null,
    call.error ? h('div', { class: 'note error-text' }, call.error.message) : null,
    call.presentations.map(presentationView),
    call.output ? h('details', {}, h('summary', {}, 'result'), h('pre', { class: 'output result' }, call.output)) : null,
  );
}

export function turnsView(state, selected, select, cancel) {
  if (state.turns.length === 0) return h('p', { class: 'empty' }, 'No turns yet: they appear here as they start.');
  const turn = state.turns.find((item) => item.turnId === selected) ?? state.turns[0];
  return h('div', { class: 'split' },
    h('ul', { class: 'turn-list' }, state.turns.map((item) => h('li', {
      class: item.turnId === turn.turnId ? 'selected' : '',
      'data-turn': item.turnId,
      'on:click': () => select(item.turnId),
    }, badge(item.status), h('span', { class: 'kind' }, item.kind), ` ${item.agentId} · ${item.label}`))),
    h('section', { class: 'timeline', 'data-turn': turn.turnId },
      h('h3', {}, `${turn.kind} turn of ${turn.agentId}`, ' ', badge(turn.status),
        turn.status === 'running' ? h('button', { class: 'cancel', 'on:click': () => cancel(turn.turnId) }, 'cancel') : null),
      h('p', { class: 'note' }, `${turn.label} · started ${clock(turn.startedAt)}${turn.droppedEvents ? ` · ${turn.droppedEvents} early events dropped` : ''}`),
      h('ol', { class: 'events' }, timelineOf(turn).map((row) => {
        if (row.kind === 'model') {
          const usage = row.usage ? `${row.usage.inputTokens ?? row.usage.input_tokens ?? '?'} in / ${row.usage.outputTokens ?? row.usage.output_tokens ?? '?'} out tokens` : 'waiting for the model';
          return h('li', { class: 'model' }, h('span', { class: 'label' }, `model request ${row.iteration}`), h('span', { class: 'note' }, ` ${row.inputItems} items, ${row.tools} tools → ${usage}${row.functionCalls !== undefined ? `, ${row.functionCalls} calls` : ''}`));
        }
        if (row.kind === 'finished') {
          return h('li', { class: 'finished' }, badge(row.status), row.error ? h('div', { class: 'note error-text' }, row.error) : null, h('pre', { class: 'final' }, row.finalText));
        }
        return callRow(row);
      })),
    ));
}

export function todosView(state) {
  const agents = Object.keys(state.todos);
  if (agents.length === 0) return h('p', { class: 'empty' }, 'No todo list yet: it appears when a turn writes one.');
  return agents.map((agentId) => {
    const todos = Array.isArray(state.todos[agentId]) ? state.todos[agentId] : [];
    return h('div', { class: 'todos', 'data-agent': agentId }, h('h3', {}, agentId),
      h('ul', {}, todos.map((todo) => h('li', { class: `todo todo-${String(todo.status ?? '').replace(/[^a-z_]/g, '')}` }, badge(todo.status ?? '?'), ' ', todo.content ?? todo.title ?? text(todo)))));
  });
}

/**
 * A run's tasks in columns by dependency depth, with an SVG edge per dependency. The boxes are laid
 * out by the browser (a flex column per depth) and grow to their content: a fixed box height cut
 * the attempt line and long results. The edges are drawn once the boxes have their sizes.
 */
function graphOf(run) {
  const depth = new Map();
  const level = (task, seen = new Set()) => {
    if (depth.has(task.taskId)) return depth.get(task.taskId);
    if (seen.has(task.taskId)) return 0;
    seen.add(task.taskId);
    const parents = task.dependsOn.map((id) => run.tasks.find((other) => other.taskId === id)).filter(Boolean);
    const value = parents.length === 0 ? 0 : 1 + Math.max(...parents.map((parent) => level(parent, seen)));
    depth.set(task.taskId, value);
    return value;
  };
  run.tasks.forEach((task) => level(task));
  const columns = [];
  for (const task of run.tasks) (columns[depth.get(task.taskId)] ??= []).push(task);
  const edges = svg('svg', { class: 'edges', width: 0, height: 0 });
  const attemptsOf = (taskId) => run.attempts.filter((attempt) => attempt.taskId === taskId);
  const boxes = new Map();
  const graph = h('div', { class: 'graph' },
    edges,
    columns.map((column) => h('div', { class: 'graph-column' }, column.map((task) => {
      const box = h('div', { class: `task task-${task.state}`, 'data-task': task.taskId, 'data-state': task.state },
        h('div', { class: 'task-head' }, h('b', {}, task.taskId), ' ', badge(task.state)),
        h('div', { class: 'note' }, `attempts ${task.attempts}/${task.maxAttempts}${task.dependsOn.length ? ` · after ${task.dependsOn.join(', ')}` : ''}`),
        task.resultJson ? h('pre', { class: 'result' }, task.resultJson) : null,
        task.error ? h('div', { class: 'note error-text' }, task.error) : null,
        h('div', { class: 'note' }, attemptsOf(task.taskId).map((attempt) => `#${attempt.attempt} ${attempt.outcome ?? 'running'}${attempt.owner ? ` on ${attempt.owner}` : ''}`).join(' · ')),
      );
      boxes.set(task.taskId, box);
      return box;
    }))),
  );
  const draw = () => {
    if (!graph.isConnected) return;
    edges.replaceChildren();
    edges.setAttribute('width', String(graph.scrollWidth));
    edges.setAttribute('height', String(graph.scrollHeight));
    for (const task of run.tasks) {
      for (const parent of task.dependsOn) {
        const from = boxes.get(parent), to = boxes.get(task.taskId);
        if (!from || !to) continue;
        // From the middle of the parent's right side to the middle of the child's left side.
        edges.appendChild(svg('line', {
          x1: from.offsetLeft + from.offsetWidth, y1: from.offsetTop + from.offsetHeight / 2,
          x2: to.offsetLeft, y2: to.offsetTop + to.offsetHeight / 2,
        }));
      }
    }
  };
  // After the view is in the page (laid out), and again when the window's width changes the wrapping.
  requestAnimationFrame(draw);
  const onResize = () => (graph.isConnected ? draw() : window.removeEventListener('resize', onResize));
  window.addEventListener('resize', onResize);
  return graph;
}

export function workflowsView(state, cancel) {
  if (state.workflows.length === 0) return h('p', { class: 'empty' }, state.storeError ?? 'No workflow runs.');
  return state.workflows.map((run) => {
    const graph = graphOf(run);
    return h('div', { class: 'run', 'data-run': run.runId, 'data-state': run.state },
      h('h3', {}, `${run.name} `, badge(run.state), h('span', { class: 'note' }, ` ${run.agentId} · ${run.runId} · max parallel ${run.maxParallel} · ${clock(run.createdAt)}`),
        run.state === 'running' ? h('button', { class: 'cancel', 'on:click': () => cancel(run.runId) }, 'cancel') : null),
      run.error ? h('div', { class: 'note error-text' }, run.error) : null,
      graph);
  });
}

export function schedulesView(state, cancelJob) {
  const schedules = state.schedules.length === 0 ? h('p', { class: 'empty' }, 'No schedules.') : h('table', {},
    h('thead', {}, h('tr', {}, ['agent', 'when', 'prompt', 'next', 'last', 'fired', 'missed'].map((name) => h('th', {}, name)))),
    h('tbody', {}, state.schedules.map((schedule) => h('tr', { 'data-schedule': schedule.scheduleId },
      h('td', {}, schedule.agentId), h('td', {}, `${schedule.cron ?? schedule.at} (${schedule.timeZone})`), h('td', {}, schedule.prompt),
      h('td', {}, schedule.nextFireAt ? new Date(schedule.nextFireAt).toLocaleString() : '—'), h('td', {}, schedule.lastFiredAt ? new Date(schedule.lastFiredAt).toLocaleString() : '—'),
      h('td', {}, String(schedule.firedCount)), h('td', {}, String(schedule.missedCount))))));
  const jobs = state.jobs.length === 0 ? h('p', { class: 'empty' }, 'No background jobs.') : h('table', {},
    h('thead', {}, h('tr', {}, ['agent', 'job', 'status', 'prompt', 'attempts', 'started', 'finished', 'result', ''].map((name) => h('th', {}, name)))),
    h('tbody', {}, state.jobs.map((job) => h('tr', { 'data-job': job.jobId },
      h('td', {}, job.agentId), h('td', {}, job.jobId), h('td', {}, badge(job.status)), h('td', {}, job.prompt), h('td', {}, String(job.attempts)),
      h('td', {}, clock(job.startedAt)), h('td', {}, clock(job.finishedAt)), h('td', {}, h('pre', {}, job.error || job.finalText)),
      h('td', {}, job.status === 'queued' || job.status === 'running' ? h('button', { class: 'cancel', 'on:click': () => cancelJob(job.jobId) }, 'cancel') : null)))));
  return [h('h3', {}, 'Schedules'), schedules, h('h3', {}, 'Background jobs'), jobs];
}

export function approvalsView(state, decide) {
  if (state.approvals.length === 0) return h('p', { class: 'empty' }, 'No call waits for approval.');
  return h('ul', { class: 'approvals' }, state.approvals.map((approval) => h('li', { class: 'approval', 'data-approval': approval.approvalId },
    h('div', { class: 'call-head' },
      h('span', { class: 'label' }, approval.label),
      h('span', { class: 'tool' }, approval.namespace ? `${approval.namespace}.${approval.toolName}` : approval.toolName),
      badge(approval.destructive ? 'destructive' : approval.readOnly ? 'read-only' : 'changes things', approval.destructive ? 'error' : 'running')),
    h('div', { class: 'note' }, `${approval.agentId} · turn ${approval.turnId} · ${approval.source === 'store' ? `stored, expires ${clock(approval.expiresAt)}` : 'this process'}`),
    h('pre', {}, approval.parametersJson),
    h('button', { class: 'approve', 'on:click': () => decide(approval.approvalId, true) }, 'Approve'),
    h('button', { class: 'deny', 'on:click': () => decide(approval.approvalId, false) }, 'Deny'),
  )));
}
