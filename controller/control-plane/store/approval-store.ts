/**
 * The approval part of the control-plane store. A slot for now: the issue that adds approvals fills
 * in its domain types and async operations here, and its SQLite implementation beside the others.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ApprovalStore {}
