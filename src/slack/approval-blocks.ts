import { type ApprovalCard, type ApprovalDecision, approvalCardText } from "../chat/index.js";

/** Prefix of the action ids of approval buttons: `threadline:<decision>:<approvalId>`. */
export const APPROVAL_ACTION_PREFIX = "threadline:";

/** Slack's limit on a section's text. */
const SECTION_CHARS = 3000;
/** Slack's limit on a button's label. */
const BUTTON_LABEL_CHARS = 75;

/** The action id of an approval button. */
export function approvalActionId(decision: ApprovalDecision, approvalId: string): string {
  return `${APPROVAL_ACTION_PREFIX}${decision}:${approvalId}`;
}

/** Parses {@link approvalActionId}; `undefined` for any other action. */
export function parseApprovalAction(
  actionId: string,
): { decision: ApprovalDecision; approvalId: string } | undefined {
  const match = /^threadline:(approve|deny|always):(.+)$/.exec(actionId);
  if (!match) return undefined;
  return { decision: match[1] as ApprovalDecision, approvalId: match[2]! };
}

/** A Block Kit block (kept loose: Slack validates the shape). */
export type SlackBlock = Record<string, unknown>;

/**
 * The Block Kit card of an approval: a header line, the arguments in a code block (cut to fit a section),
 * who may decide and the expiry (or the decision, who made it and when) as context, and — while pending
 * — the buttons Approve · Deny · Always allow `<tool>` here. Decided, expired and cancelled cards have no
 * buttons. The plain-text fallback (notifications, screen readers) is {@link approvalFallbackText}.
 */
export function approvalBlocks(card: ApprovalCard): SlackBlock[] {
  const lines = approvalCardText(card, "slack").split("\n");
  const header = lines[0] ?? "";
  const fenceEnd = lines.indexOf("```", 2);
  const code = lines.slice(1, fenceEnd + 1).join("\n");
  const status = lines.slice(fenceEnd + 1).join("\n");
  const blocks: SlackBlock[] = [
    { type: "section", text: { type: "mrkdwn", text: header } },
    { type: "section", text: { type: "mrkdwn", text: fitCode(code) } },
  ];
  if (status !== "") blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: status }] });
  if (card.state.kind === "pending") {
    blocks.push({
      type: "actions",
      block_id: `threadline-approval-${card.approvalId}`.slice(0, 255),
      elements: [
        button("Approve", approvalActionId("approve", card.approvalId), card.approvalId, "primary"),
        button("Deny", approvalActionId("deny", card.approvalId), card.approvalId, "danger"),
        button(
          `Always allow ${card.toolName} here`,
          approvalActionId("always", card.approvalId),
          card.approvalId,
        ),
      ],
    });
  }
  return blocks;
}

/** The message text sent with the blocks: the whole card as mrkdwn. */
export function approvalFallbackText(card: ApprovalCard): string {
  return approvalCardText(card, "slack");
}

function button(label: string, actionId: string, value: string, style?: "primary" | "danger"): SlackBlock {
  const text = label.length <= BUTTON_LABEL_CHARS ? label : `${label.slice(0, BUTTON_LABEL_CHARS - 1)}…`;
  return {
    type: "button",
    text: { type: "plain_text", text, emoji: true },
    action_id: actionId,
    value,
    ...(style ? { style } : {}),
  };
}

/** Keeps a code block within a section's limit, closing the fence after the cut. */
function fitCode(code: string): string {
  if (code.length <= SECTION_CHARS) return code;
  const note = "\n… (truncated)\n```";
  return `${code.slice(0, SECTION_CHARS - note.length)}${note}`;
}
