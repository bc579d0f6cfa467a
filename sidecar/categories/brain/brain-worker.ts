// The Brain's upkeep worker thread: the entry `startBrainWorker` starts. It owns every write to the
// Brain database (build, watcher updates, reconcile), so none of that work runs on the sidecar's
// main thread, where the calls are served.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { BrainFromWorker, BrainToWorker, BrainWorkerData } from './brain-protocol.js';
import { BrainUpkeep } from './brain-upkeep.js';

const port = parentPort;
if (!port) throw new Error('brain-worker.ts runs as a worker thread (see start-brain-worker.ts)');
const post = (message: BrainFromWorker) => port.postMessage(message);

const data = workerData as BrainWorkerData;
// Linux keeps nice values per thread: /proc/thread-self names this thread's id, and setting its
// priority leaves the sidecar's main thread (which serves the calls) as it is.
if (data.niceness !== 0) {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), data.niceness);
  } catch {
    // No per-thread priority here (not Linux, or not permitted): upkeep runs at the process's.
  }
}

let upkeep: BrainUpkeep | undefined;
try {
  upkeep = new BrainUpkeep(data, post);
  upkeep.start();
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  post({ type: 'log', level: 'error', message: 'brain index could not be opened', fields: { error: message } });
  post({
    type: 'status',
    status: { phase: 'failed', error: message, pagesFound: 0, pagesIndexed: 0, bytesIndexed: 0, skippedByPageCap: 0, skippedByTotalCap: 0, truncatedPages: 0, generation: 0 },
  });
}

port.on('message', (message: BrainToWorker) => {
  if (message.type === 'reconcile') upkeep?.requestReconcile();
  else if (message.type === 'close') {
    const done = () => {
      post({ type: 'closed' });
      port.close();
    };
    if (!upkeep) done();
    else
      upkeep.close().then(done, (error: unknown) => {
        post({ type: 'log', level: 'error', message: 'brain index close failed', fields: { error: String(error) } });
        done();
      });
  }
});
