/**
 * The equipment-reservation pack: SQLite inventory, four tools, a task record, the
 * executor's permission policy, decision sources (deterministic workflow, untrusted variants,
 * an HTTP policy server) and the host's claim check.
 */
export { CATALOG, type CatalogItem } from "./catalog.js";
export { type LedgerRow, ReservationDb, type ReserveOutcome, type ReserveRequest } from "./database.js";
export { TaskPermissionPolicy } from "./policy.js";
export { type PolicyServer, startPolicyServer } from "./policy-server.js";
export { type ReservationSessionOptions, reservationEngine, runReservationTask } from "./session.js";
export { DENIAL_RULES, type DenialRule, FINISH_STATUSES, type FinishStatus, parseClaim } from "./status.js";
export {
  deriveKey,
  parseTask,
  type ReservationTask,
  reservationTaskSchema,
  TaskError,
  taskGoal,
} from "./task.js";
export { createReservationTools, reserveInput, searchItems } from "./tools.js";
export { ClaimAcceptance, checkClaim, type Evidence, evidenceFrom } from "./verify.js";
export {
  type Action,
  badQuantityPolicy,
  type DecisionPolicy,
  httpActionFor,
  nextAction,
  overreachPolicy,
  scriptFor,
  workflowPolicy,
} from "./workflow.js";
