// The console page: reads /api/state, follows /api/events (SSE read through fetch, so the token
// can travel in a header), and renders one view at a time. Every datum goes into the page as text.
import { h } from './dom.js';
import { agentsView, approvalsView, schedulesView, todosView, turnsView, workflowsView } from './views.js';

const views = ['turns', 'approvals', 'agents', 'todos', 'workflows', 'schedules'];
let state = { agents: [], turns: [], todos: {}, workflows: [], schedules: [], jobs: [], approvals: [] };
let selectedTurn;
// The token arrives once, in the address's fragment (`#token=...`, never sent to the server), as
// the console printed it at start. It moves to this origin's storage and leaves the address bar
// (and history) at once, so no later URL, bookmark or shared screen carries it.
const TOKEN_KEY = 'console-token';
let token = localStorage.getItem(TOKEN_KEY) ?? '';
if (location.hash.startsWith('#token=')) {
  token = decodeURIComponent(location.hash.slice('#token='.length));
  localStorage.setItem(TOKEN_KEY, token);
  history.replaceState(null, '', location.pathname + location.search);
}
let scheduled = false;
let refreshing;

const headers = (extra = {}) => ({ ...extra, ...(token ? { authorization: `Bearer ${token}` } : {}) });

// A stored token the console refuses is stale (each start without --console-token-file makes a new one).
function askForToken() {
  localStorage.removeItem(TOKEN_KEY);
  document.getElementById('token-form').hidden = false;
}

function showError(message) {
  const element = document.getElementById('error');
  element.hidden = !message;
  element.textContent = message ?? '';
}

async function api(path, body) {
  const response = await fetch(path, body === undefined ? { headers: headers() } : { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) });
  if (response.status === 401) {
    askForToken();
    throw new Error('this console needs its token');
  }
  const value = await response.json();
  if (!response.ok) throw new Error(value.error ?? `HTTP ${response.status}`);
  return value;
}

async function refresh() {
  // One read at a time; a change during a read asks for one more.
  if (refreshing) return refreshing.then(() => refresh());
  refreshing = api('/api/state').then((value) => {
    state = value;
    render();
  }).catch((error) => showError(error.message)).finally(() => { refreshing = undefined; });
  return refreshing;
}

function onTurnEvent(message) {
  let turn = state.turns.find((item) => item.turnId === message.turn.turnId);
  if (!turn) {
    turn = { ...message.turn, status: message.status, startedAt: message.time, events: [], droppedEvents: 0 };
    state.turns.unshift(turn);
  }
  if (turn.events.some((item) => item.seq === message.seq)) return;
  turn.events.push({ seq: message.seq, time: message.time, event: message.event });
  turn.status = message.status;
  const event = message.event;
  if (event.type === 'presentation' && event.kind === 'todo.updated' && event.payload?.todos) state.todos[turn.agentId] = event.payload.todos;
  // Approvals and the views read from the store are read again; the timeline is updated in place.
  if (event.type.startsWith('approval-') || event.type === 'turn-finished') void refresh();
  schedule();
}

async function follow() {
  for (;;) {
    try {
      const response = await fetch('/api/events', { headers: headers() });
      if (response.status === 401) {
        askForToken();
        setStatus('needs the token');
        return;
      }
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      setStatus('live');
      await refresh();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trimStart()).join('\n');
          if (!data) continue;
          const message = JSON.parse(data);
          if (message.type === 'turn-event') onTurnEvent(message);
          else if (message.type === 'changed') void refresh();
        }
      }
    } catch (error) {
      showError(`live updates: ${error.message}`);
    }
    setStatus('reconnecting…');
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function setStatus(text) {
  const element = document.getElementById('status');
  element.textContent = text;
  element.dataset.state = text;
}

async function act(path, body) {
  try {
    showError(undefined);
    await api(path, body);
    await refresh();
  } catch (error) {
    showError(error.message);
  }
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
}

function currentView() {
  const name = location.hash.slice(1);
  return views.includes(name) ? name : 'turns';
}

function render() {
  const view = currentView();
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('active', link.dataset.view === view);
  const pending = state.approvals.length;
  document.getElementById('approval-count').textContent = pending ? `(${pending})` : '';
  const content = {
    turns: () => turnsView(state, selectedTurn, (turnId) => { selectedTurn = turnId; render(); }, (turnId) => act(`/api/turns/${encodeURIComponent(turnId)}/cancel`, {})),
    approvals: () => approvalsView(state, (id, approved) => act(`/api/approvals/${encodeURIComponent(id)}`, { approved })),
    agents: () => agentsView(state),
    todos: () => todosView(state),
    workflows: () => workflowsView(state, (runId) => act(`/api/workflows/${encodeURIComponent(runId)}/cancel`, {})),
    schedules: () => schedulesView(state, (jobId) => act(`/api/jobs/${encodeURIComponent(jobId)}/cancel`, {})),
  }[view]();
  const main = document.getElementById('view');
  main.replaceChildren(h('section', { id: `view-${view}`, 'data-view': view }, content));
}

document.getElementById('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  token = document.getElementById('token').value.trim();
  localStorage.setItem(TOKEN_KEY, token);
  document.getElementById('token-form').hidden = true;
  void follow();
});
window.addEventListener('hashchange', render);
render();
void follow();
