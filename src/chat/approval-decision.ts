import type { ApprovalDecision } from "./types.js";

// A record (not a list) so that adding a decision to the type without listing it here fails to compile.
const KNOWN: Record<ApprovalDecision, true> = { approve: true, deny: true, always: true, alwaysThread: true };

/** Every decision an approval button can carry, in the order cards show them. */
export const APPROVAL_DECISIONS = Object.keys(KNOWN) as [ApprovalDecision, ...ApprovalDecision[]];

/**
 * Whether `value` is one of {@link APPROVAL_DECISIONS}. Adapters use it on what a click payload carries
 * (a forged or outdated payload may carry anything): anything else is not a decision and is dropped.
 */
export function isApprovalDecision(value: unknown): value is ApprovalDecision {
  return typeof value === "string" && Object.hasOwn(KNOWN, value);
}
