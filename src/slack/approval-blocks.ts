import {
  type ApprovalCard,
  type ApprovalDecision,
  approvalButtonLabels,
  approvalCardText,
  approvalIdCodec,
  offersThreadGrant,
} from "../chat/index.js";
import { SLACK_DIALECT } from "./dialect.js";

/** Prefix of the action ids of approval buttons: `threadline:<decision>:<approvalId>`. */
export const APPROVAL_ACTION_PREFIX = "threadline:";
/**
 * The ids of Slack's approval buttons and forms, `threadline:<decision or form>:<approvalId>`: the wire
 * format of cards already posted, so it never changes.
 */
export const SLACK_APPROVAL_IDS = approvalIdCodec("threadline");

/** Slack's limit on a section's text. */
const SECTION_CHARS = 3000;
/**
 * Slack's limits on a button: `text` ≤ 75 characters, `action_id` ≤ 255, `value` ≤ 2000; a confirmation
 * dialog's `title` ≤ 100, `text` ≤ 300, `confirm`/`deny` ≤ 30
 * (https://docs.slack.dev/reference/block-kit/block-elements/button-element,
 * https://docs.slack.dev/reference/block-kit/composition-objects/confirmation-dialog-object).
 */
const LIMITS = { label: 75, actionId: 255, confirmTitle: 100, confirmText: 300 } as const;

/** The action id of an approval button. */
export const approvalActionId: (decision: ApprovalDecision, approvalId: string) => string =
  SLACK_APPROVAL_IDS.id;

/**
 * Parses {@link approvalActionId}; `undefined` for any other action, and for an approval action whose
 * decision is not one of {@link APPROVAL_DECISIONS} (a forged or outdated payload), so it decides nothing.
 */
export const parseApprovalAction = SLACK_APPROVAL_IDS.parseDecision;

/** A Block Kit block (kept loose: Slack validates the shape). */
export type SlackBlock = Record<string, unknown>;

/**
 * The Block Kit card of an approval: a header line, the arguments in a code block (cut to fit a section),
 * who may decide and the expiry (or the decision, who made it, when and whom an "always" covers) as
 * context, and — while pending — the buttons Approve · Deny · Always allow `<tool>` for `<requester>` in
 * this thread · Edit and approve… · Deny with reason… (the last two open a modal), plus, when someone besides the requester may decide, a secondary row with "Always allow
 * `<tool>` for everyone here (approvers)" behind a confirmation dialog. Decided, expired and cancelled
 * cards have no buttons. The plain-text fallback (notifications, screen readers) is
 * {@link approvalFallbackText}.
 */
export function approvalBlocks(card: ApprovalCard): SlackBlock[] {
  const lines = approvalCardText(card, SLACK_DIALECT).split("\n");
  const header = lines[0] ?? "";
  const fenceEnd = lines.indexOf("```", 2);
  const code = lines.slice(1, fenceEnd + 1).join("\n");
  const status = lines.slice(fenceEnd + 1).join("\n");
  const blocks: SlackBlock[] = [
    { type: "section", text: { type: "mrkdwn", text: header } },
    { type: "section", text: { type: "mrkdwn", text: fitCode(code) } },
  ];
  if (status !== "") blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: status }] });
  if (card.state.kind !== "pending") return blocks;
  const labels = approvalButtonLabels(card, LIMITS.label);
  const id = card.approvalId;
  blocks.push({
    type: "actions",
    block_id: `threadline-approval-${id}`.slice(0, LIMITS.actionId),
    elements: [
      button(labels.approve, "approve", id, { style: "primary" }),
      button(labels.deny, "deny", id, { style: "danger" }),
      button(labels.always, "always", id),
      // These two open a modal (src/slack/approval-modal.ts); the modal's submission decides.
      formButton(labels.edit, SLACK_APPROVAL_IDS.id("edit", id), id),
      formButton(labels.denyWithReason, SLACK_APPROVAL_IDS.id("reason", id), id),
    ],
  });
  if (offersThreadGrant(card)) {
    // A row of its own, unstyled and confirmed: granting everyone is the rarer, wider choice.
    blocks.push({
      type: "actions",
      block_id: `threadline-approval-thread-${id}`.slice(0, LIMITS.actionId),
      elements: [button(labels.alwaysThread, "alwaysThread", id, { confirm: threadConfirm(card) })],
    });
  }
  return blocks;
}

/** The message text sent with the blocks: the whole card as mrkdwn. */
export function approvalFallbackText(card: ApprovalCard): string {
  return approvalCardText(card, SLACK_DIALECT);
}

function button(
  label: string,
  decision: ApprovalDecision,
  approvalId: string,
  extra: { style?: "primary" | "danger"; confirm?: SlackBlock } = {},
): SlackBlock {
  return {
    type: "button",
    text: { type: "plain_text", text: label, emoji: true },
    action_id: approvalActionId(decision, approvalId),
    value: approvalId,
    ...extra,
  };
}

function formButton(label: string, actionId: string, approvalId: string): SlackBlock {
  return {
    type: "button",
    text: { type: "plain_text", text: label, emoji: true },
    action_id: actionId.slice(0, LIMITS.actionId),
    value: approvalId,
  };
}

/** The confirmation dialog of the "everyone here" button (plain text: it renders no Markdown). */
function threadConfirm(card: ApprovalCard): SlackBlock {
  const tool = clipped(card.toolName, 60);
  const text = `Anyone who writes in this thread will be able to run ${tool} without asking, from now on. Only approvers can grant this.`;
  return {
    title: { type: "plain_text", text: clipped(`Allow ${tool} for everyone?`, LIMITS.confirmTitle) },
    text: { type: "plain_text", text: clipped(text, LIMITS.confirmText) },
    confirm: { type: "plain_text", text: "Allow for everyone" },
    deny: { type: "plain_text", text: "Cancel" },
  };
}

function clipped(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 2);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 2 : max - 1)}…`;
}

/** Keeps a code block within a section's limit, closing the fence after the cut. */
function fitCode(code: string): string {
  if (code.length <= SECTION_CHARS) return code;
  const note = "\n… (truncated)\n```";
  return `${code.slice(0, SECTION_CHARS - note.length)}${note}`;
}
