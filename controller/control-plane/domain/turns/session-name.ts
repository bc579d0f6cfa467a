import { ControlPlaneError } from '../control-plane-error.js';

/** A session name: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit. */
export const SESSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * Checks a session name (`--session`, ContinueSession's `name`).
 *
 * @throws ControlPlaneError `invalid_request` naming the rule, quoting at most 40 characters.
 */
export function checkSessionName(name: string, what = 'session name'): string {
  if (!SESSION_NAME.test(name)) {
    throw new ControlPlaneError('invalid_request', `${what} "${name.slice(0, 40)}" is not a session name: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}
