import {
  type APIActionRowComponent,
  type APIButtonComponent,
  type APIEmbed,
  type APIEmbedField,
  ButtonStyle,
  ComponentType,
} from "discord.js";
import {
  type ApprovalCard,
  type ApprovalDecision,
  alwaysScope,
  approvalButtonLabels,
  approvalIdCodec,
  escapeMarkdown,
  offersThreadGrant,
  requesterOf,
} from "../chat/index.js";

/** Every approval button's custom id starts with this (`tl:<decision>:<approvalId>`). */
export const APPROVAL_CUSTOM_ID_PREFIX = "tl";

/** The ids of Discord's approval buttons: the wire format of cards already posted, so it never changes. */
export const DISCORD_APPROVAL_IDS = approvalIdCodec(APPROVAL_CUSTOM_ID_PREFIX);

/**
 * Discord's limits on the parts of a card: embed title 256, description 4096, field value 1024
 * (https://discord.com/developers/docs/resources/message#embed-object-embed-limits); button label 80,
 * custom_id 100 (https://discord.com/developers/docs/components/reference#button).
 */
const LIMITS = { title: 256, description: 4096, field: 1024, label: 80 } as const;

const COLORS = { pending: 0xf0b232, approved: 0x23a55a, denied: 0xda373c, closed: 0x80848e } as const;

/** The message body (`POST`/`PATCH` a channel message) that shows an approval card. */
export interface ApprovalMessageBody {
  content: string;
  embeds: APIEmbed[];
  components: APIActionRowComponent<APIButtonComponent>[];
  allowed_mentions: { parse: [] };
}

/**
 * The custom id of one button of a card: `tl:<decision>:<approvalId>`. Discord allows 100 characters, so
 * approval ids must stay within 84 (the longest decision, `alwaysThread`, takes 16 with the prefix).
 */
export const approvalCustomId: (decision: ApprovalDecision, approvalId: string) => string =
  DISCORD_APPROVAL_IDS.id;

/**
 * Reads a custom id made by {@link approvalCustomId}; `undefined` for any other component's id, and for
 * one whose decision is not one of `APPROVAL_DECISIONS` (a forged or outdated payload decides nothing).
 */
export const parseApprovalCustomId = DISCORD_APPROVAL_IDS.parseDecision;

/**
 * Renders an approval card as a Discord message: a one-line `content` (what notifications show), an
 * embed with the tool in the title, the arguments in a code block, who may decide and the expiry as a
 * relative timestamp (or the decision, who made it, when and whom an "always" covers), and — while
 * pending — a row of buttons Approve · Deny · Always allow `<tool>` for `<requester>` in this thread ·
 * Edit and approve… · Deny with reason… (the last two open a modal), plus,
 * when someone besides the requester may decide, a second row with the secondary "Always allow `<tool>`
 * for everyone here (approvers)". Custom ids carry the approval id. Decided cards have no buttons. Every
 * part is cut to Discord's limits; mentions never ping. Pure; never throws.
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
    components: pending ? buttonRows(card) : [],
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
        {
          name: "Expires",
          value: card.expiresAt > 0 ? `<t:${Math.floor(card.expiresAt / 1000)}:R>` : "no time limit",
        },
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
    case "approved": {
      const by = `by ${escapeMarkdown(state.by.name)}, ${at(state.at)}`;
      const scope = alwaysScope(state);
      const whom = scope === "thread" ? "everyone" : escapeMarkdown(requesterOf(card));
      const value = scope
        ? `✅ Always allowed \`${tool}\` for ${whom} in this thread — ${by}`
        : `✅ Approved ${by}`;
      const decision: APIEmbedField = { name: "Decision", value: cut(value, LIMITS.field) };
      if (!state.changes || state.changes.length === 0) return [decision];
      // Edit and approve: what the approver changed, one `field: before → after` line each.
      const changes = state.changes.map((change) => `\`${change.replaceAll("`", "'")}\``).join("\n");
      return [decision, { name: "Edited before approval", value: cut(changes, LIMITS.field) }];
    }
    case "denied":
      return [
        {
          name: "Decision",
          value: cut(
            `❌ Denied by ${escapeMarkdown(state.by.name)}, ${at(state.at)}${
              state.reason ? `\nReason: ${escapeMarkdown(state.reason)}` : ""
            }`,
            LIMITS.field,
          ),
        },
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

function buttonRows(card: ApprovalCard): APIActionRowComponent<APIButtonComponent>[] {
  const labels = approvalButtonLabels(card, LIMITS.label);
  const button = (decision: ApprovalDecision, style: ButtonStyle): APIButtonComponent => ({
    type: ComponentType.Button,
    style: style as ButtonStyle.Success,
    label: labels[decision],
    custom_id: approvalCustomId(decision, card.approvalId),
  });
  const row = (components: APIButtonComponent[]): APIActionRowComponent<APIButtonComponent> => ({
    type: ComponentType.ActionRow,
    components,
  });
  const rows = [
    row([
      button("approve", ButtonStyle.Success),
      button("deny", ButtonStyle.Danger),
      button("always", ButtonStyle.Secondary),
      // These two open a modal (src/discord/approval-modal.ts); its submission decides.
      formButton(labels.edit, DISCORD_APPROVAL_IDS.id("edit", card.approvalId)),
      formButton(labels.denyWithReason, DISCORD_APPROVAL_IDS.id("reason", card.approvalId)),
    ]),
  ];
  // A row of its own below the others: granting everyone is the rarer, wider choice.
  if (offersThreadGrant(card)) rows.push(row([button("alwaysThread", ButtonStyle.Secondary)]));
  return rows;
}

function formButton(label: string, customId: string): APIButtonComponent {
  return { type: ComponentType.Button, style: ButtonStyle.Secondary, label, custom_id: customId };
}

/** Cuts `text` to `max` characters with an ellipsis, never inside a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
