import { isApprovalDecision } from "./approval-decision.js";
import type { ApprovalDecision } from "./types.js";

/** Which form a card's button opens: a denial with a reason, or edit and approve. */
export type ApprovalFormKind = "reason" | "edit";

/** What one approval button (or form) id names: a decision, or a form to open, of one approval. */
export type ApprovalButtonAction =
  | { kind: "decision"; decision: ApprovalDecision; approvalId: string }
  | { kind: "form"; form: ApprovalFormKind; approvalId: string };

/**
 * The id of an approval card's button, on every platform: `<prefix>:<decision or form>:<approvalId>`.
 * The prefix is the adapter's (Slack `threadline`, Discord `tl`, Discord modals `tlm`); it is part of the
 * wire format of cards already posted, so an adapter never changes its prefix. The approval id is last
 * and may itself contain `:`. Callers keep the result within their platform's id limit.
 */
export function approvalButtonId(
  prefix: string,
  action: ApprovalDecision | ApprovalFormKind,
  approvalId: string,
): string {
  return `${prefix}:${action}:${approvalId}`;
}

/**
 * Reads an id made by {@link approvalButtonId} with `prefix`; `undefined` for any other id, for an empty
 * approval id, and for an action that is neither one of `APPROVAL_DECISIONS` nor a form (a forged or
 * outdated payload decides nothing). Pure; never throws.
 */
export function parseApprovalButtonId(prefix: string, id: string): ApprovalButtonAction | undefined {
  if (!id.startsWith(`${prefix}:`)) return undefined;
  const rest = id.slice(prefix.length + 1);
  const colon = rest.indexOf(":");
  if (colon < 0) return undefined;
  const action = rest.slice(0, colon);
  const approvalId = rest.slice(colon + 1);
  if (approvalId === "") return undefined;
  if (isApprovalDecision(action)) return { kind: "decision", decision: action, approvalId };
  if (action === "reason" || action === "edit") return { kind: "form", form: action, approvalId };
  return undefined;
}

/** The approval ids of one prefix: what an adapter builds its buttons' (or forms') ids with. */
export interface ApprovalIdCodec {
  /** `<prefix>:<decision or form>:<approvalId>` ({@link approvalButtonId}). */
  id(action: ApprovalDecision | ApprovalFormKind, approvalId: string): string;
  /** A decision button's id read back; `undefined` for a form's id and anything {@link parseApprovalButtonId} refuses. */
  parseDecision(id: string): { decision: ApprovalDecision; approvalId: string } | undefined;
  /** A form button's id read back; `undefined` for a decision's id and anything else refused. */
  parseForm(id: string): { form: ApprovalFormKind; approvalId: string } | undefined;
}

/** The {@link ApprovalIdCodec} of `prefix`; its functions may be passed around unbound. */
export function approvalIdCodec(prefix: string): ApprovalIdCodec {
  return {
    id: (action, approvalId) => approvalButtonId(prefix, action, approvalId),
    parseDecision(id) {
      const parsed = parseApprovalButtonId(prefix, id);
      return parsed?.kind === "decision"
        ? { decision: parsed.decision, approvalId: parsed.approvalId }
        : undefined;
    },
    parseForm(id) {
      const parsed = parseApprovalButtonId(prefix, id);
      return parsed?.kind === "form" ? { form: parsed.form, approvalId: parsed.approvalId } : undefined;
    },
  };
}
