import { status, type StatusObject } from '@grpc/grpc-js';
import { errorMessage, isToolRuntimeError } from '../../src/errors.js';

/** A gRPC status with a message that says why: the one place errors become statuses. */
export function toGrpcStatus(error: unknown, fallbackCode: status = status.INTERNAL): Pick<StatusObject, 'code' | 'details'> {
  if (isToolRuntimeError(error)) {
    switch (error.code) {
      case 'invalid_request':
      case 'invalid_arguments':
        return { code: status.INVALID_ARGUMENT, details: error.message };
      case 'duplicate_tool':
      case 'invalid_definition':
        return { code: status.FAILED_PRECONDITION, details: `the tool set is misconfigured: ${error.message}` };
      case 'aborted':
        return { code: status.CANCELLED, details: error.message };
      default:
        return { code: status.INTERNAL, details: error.message };
    }
  }
  return { code: fallbackCode, details: errorMessage(error) };
}
