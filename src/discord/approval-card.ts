import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIEmbed,
  type APIEmbedField,
  ButtonStyle,
  ComponentType,
} from "discord.js";
import type { ApprovalCard, ApprovalDecision } from "../chat/index.js";

/** Every approval button's custom id starts with this (`tl:<decision>:<approvalId>`). */
export const APPROVAL_CUSTOM_ID_PREFIX = "tl";

const DECISIONS: readonly ApprovalDecision[] = ["approve", "deny", "always"];

/** Discord's limits on the parts of a card. */
const LIMITS = { title: 256, description: 4096, field: 1024, label: 80 } as const;

const COLORS = { pending: 0xf0b232, approved: 0x23a55a, denied: 0xda373c, closed: 0x80848e } as const;

/** The message body (`POST`/`PATCH` a channel message) that shows an approval card. */
export interface ApprovalMessageBody {
  content: string;
  embeds: APIEmbed[];
  components: APIActionRowComponent<APIButtonComponent>[];
  allowed_mentions: { parse: [] };
}

/** The custom id of one button of a card: `tl:<decision>:<approvalId>` (Discord allows 100 characters). */
export function approvalCustomId(decision: ApprovalDecision, approvalId: string): string {
  return `${APPROVAL_CUSTOM_ID_PREFIX}:${decision}:${approvalId}`;
}

/** Reads a custom id made by {@link approvalCustomId}; `undefined` for any other component's id. */
export function parseApprovalCustomId(
  customId: string,
): { decision: ApprovalDecision; approvalId: string } | undefined {
  const [prefix, decision, ...rest] = customId.split(":");
  const approvalId = rest.join(":");
  if (prefix !== APPROVAL_CUSTOM_ID_PREFIX || approvalId === "") return undefined;
  if (!DECISIONS.includes(decision as ApprovalDecision)) return undefined;
  return { decision: decision as ApprovalDecision, approvalId };
}

/**
 * Renders an approval card as a Discord message: a one-line `content` (what notifications show), an
 * embed with the tool in the title, the arguments in a code block, who may decide and the expiry as a
 * relative timestamp (or the decision, who made it and when), and — while pending — one row of buttons
 * Approve · Deny · Always allow `<tool>` whose custom ids carry the approval id. Decided cards have no
 * buttons. Every part is cut to Discord's limits; mentions never ping. Pure; never throws.
 */
export function approvalMessageBody(card: ApprovalCard): ApprovalMessageBody {
  const tool = card.toolName.replaceAll("`", "'");
  const pending = card.state.kind === "pending";
  const args = card.argumentsText.replaceAll("```", "`\u200b``");
  const embed: APIEmbed = {
    title: cut(`${pending ? "Approval needed" : "Approval"}: ${tool}`, LIMITS.title),
    description: `\`\`\`\n${cut(args, LIMITS.description - 10)}\n\`\`\``,
    color: color(card),
    fields: fields(card, tool),
  };
  return {
    content: `🔐 ${pending ? "Approval needed to run" : "Approval to run"} \`${cut(tool, 200)}\``,
    embeds: [embed],
    components: pending ? [buttons(card.approvalId, tool)] : [],
    allowed_mentions: { parse: [] },
  };
}

function fields(card: ApprovalCard, tool: string): APIEmbedField[] {
  const state = card.state;
  const at = (ms: number) => `<t:${Math.floor(ms / 1000)}:f>`;
  switch (state.kind) {
    case "pending": {
      const list: APIEmbedField[] = [
        {
          name: "Who can decide",
          value: cut(card.approvers.length > 0 ? card.approvers.join(", ") : "the requester", LIMITS.field),
        },
        { name: "Expires", value: `<t:${Math.floor(card.expiresAt / 1000)}:R>` },
      ];
      if (state.waitingMessages > 0) {
        const plural = state.waitingMessages === 1 ? "message" : "messages";
        list.push({
          name: "Waiting",
          value: `⏳ ${state.waitingMessages} ${plural} waiting for this decision`,
        });
      }
      return list;
    }
    case "approved":
      return [
        {
          name: "Decision",
          value: cut(
            state.always
              ? `✅ Always allowed \`${tool}\` in this thread — by ${state.by.name}, ${at(state.at)}`
              : `✅ Approved by ${state.by.name}, ${at(state.at)}`,
            LIMITS.field,
          ),
        },
      ];
    case "denied":
      return [
        { name: "Decision", value: cut(`❌ Denied by ${state.by.name}, ${at(state.at)}`, LIMITS.field) },
      ];
    case "expired":
      return [{ name: "Decision", value: `⌛ Denied: approval timed out, ${at(state.at)}` }];
    case "cancelled":
      return [{ name: "Decision", value: cut(`🚫 Cancelled: ${state.reason}`, LIMITS.field) }];
  }
}

function color(card: ApprovalCard): number {
  switch (card.state.kind) {
    case "pending":
      return COLORS.pending;
    case "approved":
      return COLORS.approved;
    case "denied":
      return COLORS.denied;
    default:
      return COLORS.closed;
  }
}

function buttons(approvalId: string, tool: string): APIActionRowComponent<APIButtonComponent> {
  const button = (decision: ApprovalDecision, label: string, style: ButtonStyle): APIButtonComponent => ({
    type: ComponentType.Button,
    style: style as ButtonStyle.Success,
    label: cut(label, LIMITS.label),
    custom_id: approvalCustomId(decision, approvalId),
  });
  return {
    type: ComponentType.ActionRow,
    components: [
      button("approve", "Approve", ButtonStyle.Success),
      button("deny", "Deny", ButtonStyle.Danger),
      button("always", `Always allow ${tool}`, ButtonStyle.Secondary),
    ],
  };
}

/** Cuts `text` to `max` characters with an ellipsis, never inside a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
