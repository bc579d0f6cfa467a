/**
 * A test seam: the loop awaits `stopAt(step)` at each named step, so a test can stop a controller
 * there and kill it (test/integration/durable/). Steps: `after-model-response:N` (the Nth model
 * response of the turn is journaled), `during-call:K` (the Kth call sent to the sidecar has its
 * result, not yet journaled: the call took effect, the journal does not know), `after-call:K` (its
 * result is journaled).
 */
export type StopAt = (step: string) => Promise<void> | void;

/** The environment variable that names the step `stopAtFromEnv` stops at. */
export const STOP_AT_ENV = 'TOOLS_RUNTIME_TEST_STOP_AT';

/**
 * The seam as the environment asks for it: with `TOOLS_RUNTIME_TEST_STOP_AT=STEP` set, writes
 * `stopped at STEP` to `write` when the loop reaches that step and then never resumes (the test
 * SIGKILLs the process there). Undefined when the variable is unset, so production turns pay nothing.
 */
export function stopAtFromEnv(env: NodeJS.ProcessEnv, write: (line: string) => void): StopAt | undefined {
  const target = env[STOP_AT_ENV];
  if (!target) return undefined;
  return (step) => {
    if (step !== target) return;
    write(`stopped at ${step}\n`);
    return new Promise<void>(() => {});
  };
}
