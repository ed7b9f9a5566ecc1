import type {
  ApprovalDecision,
  ApprovalForm,
  ButtonClick,
  ButtonReply,
  ChatUser,
  ThreadRef,
} from "../chat/index.js";
import type { FormResult, Intake } from "./intake.js";

/**
 * A click on an approval card's button, decided by intake: nothing to show when it counted, the form's
 * error for edited arguments that do not fit, else a private notice saying why it decided nothing.
 * Rejects on Redis errors.
 */
export async function decideClick(intake: Intake, click: ButtonClick): Promise<ButtonReply> {
  const result = await intake.decide(
    click.thread,
    click.approvalId,
    click.user,
    click.decision,
    click.reason,
    click.decision === "approve" ? click.editedArguments : undefined,
  );
  if (result.kind === "accepted") return { kind: "none" };
  if (result.kind === "invalid") return result;
  return { kind: "notice", text: decideNotice(result, click.decision) };
}

/** The deny/edit form of an approval for `user`, or a private notice saying why it may not open. */
export async function openApprovalForm(
  intake: Intake,
  thread: ThreadRef,
  approvalId: string,
  user: ChatUser,
): Promise<ApprovalForm> {
  const result = await intake.approvalForm(thread, approvalId, user);
  return result.kind === "form" ? result : { kind: "notice", text: decideNotice(result, "deny") };
}

/** The private notice for a click or form that decided nothing. */
function decideNotice(result: Exclude<FormResult, { kind: "form" }>, decision: ApprovalDecision): string {
  switch (result.kind) {
    case "forbidden":
      return decision === "alwaysThread"
        ? "You can't allow this tool for everyone in this thread: only the configured approvers can."
        : "You can't approve this: only the person who asked and the configured approvers can.";
    case "expired":
      return "This approval has expired; the tool call was denied.";
    case "already":
      return `This was already decided${result.by ? ` by ${result.by.name}` : ""} (${result.status}).`;
    default:
      return "This approval is no longer pending.";
  }
}
