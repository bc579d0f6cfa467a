import { ToolRuntimeError } from '../../../src/index.js';

/** The codes a ControlError carries (control_plane.proto, ControlError.code). */
export type ControlErrorCode = 'invalid_request' | 'not_found' | 'permission_denied' | 'limit_exceeded' | 'unavailable' | 'internal';

/**
 * A refusal of the control plane, written for the model or the operator to act on. Part of the
 * ToolRuntimeError family (its `code` is `invalid_request`, or `internal` for `internal`), with the
 * finer `controlCode` that travels in ControlError.
 */
export class ControlPlaneError extends ToolRuntimeError {
  readonly controlCode: ControlErrorCode;

  constructor(controlCode: ControlErrorCode, message: string, options?: { cause?: unknown }) {
    super(controlCode === 'internal' ? 'internal' : 'invalid_request', message, options);
    this.controlCode = controlCode;
  }
}

/** True when `error` is a ControlPlaneError, optionally with the given control code. */
export function isControlPlaneError(error: unknown, code?: ControlErrorCode): error is ControlPlaneError {
  return error instanceof ControlPlaneError && (code === undefined || error.controlCode === code);
}
