import {
  type APIModalInteractionResponseCallbackData,
  ComponentType,
  MessageFlags,
  type ModalSubmitInteraction,
  TextInputStyle,
} from "discord.js";
import {
  type ApprovalFormKind,
  approvalIdCodec,
  type ChatInbound,
  type ChatUser,
  type ThreadRef,
} from "../chat/index.js";
import { DISCORD_APPROVAL_IDS } from "./approval-card.js";

export type { ApprovalFormKind };

/** Modal custom ids start with this (`tlm:<form>:<approvalId>`), so a submission names its approval. */
export const APPROVAL_MODAL_PREFIX = "tlm";
const MODAL_IDS = approvalIdCodec(APPROVAL_MODAL_PREFIX);

/** The text input whose value a submission carries. */
const INPUT_ID = "value";

/**
 * Discord's limits on a modal (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-modal):
 * `title` ≤ 45 characters, `custom_id` ≤ 100, 1 to 5 components; a text input's `label` ≤ 45, `value`
 * and `max_length` ≤ 4000 (https://discord.com/developers/docs/components/reference#text-input).
 */
export const DISCORD_MODAL_LIMITS = { title: 45, customId: 100, label: 45, value: 4000 } as const;

/** Parses a card's "Edit and approve…" / "Deny with reason…" button id; `undefined` for anything else. */
export const parseApprovalFormId = DISCORD_APPROVAL_IDS.parseForm;

/** The modal of a form (interaction response type 9), the edit form prefilled with the arguments' JSON. */
export function approvalModal(
  form: ApprovalFormKind,
  approvalId: string,
  toolName: string,
  argumentsJson: string,
): APIModalInteractionResponseCallbackData {
  const edit = form === "edit";
  const tool = toolName.length > 20 ? `${toolName.slice(0, 19)}…` : toolName;
  return {
    custom_id: MODAL_IDS.id(form, approvalId).slice(0, DISCORD_MODAL_LIMITS.customId),
    title: (edit ? `Edit and approve ${tool}` : `Deny ${tool} with a reason`).slice(
      0,
      DISCORD_MODAL_LIMITS.title,
    ),
    components: [
      {
        type: ComponentType.ActionRow,
        components: [
          {
            type: ComponentType.TextInput,
            custom_id: INPUT_ID,
            style: TextInputStyle.Paragraph,
            label: edit ? "Arguments (JSON)" : "Reason (the model reads it)",
            required: true,
            max_length: edit ? DISCORD_MODAL_LIMITS.value : 500,
            ...(edit ? { value: argumentsJson } : {}),
          },
        ],
      },
    ],
  };
}

/**
 * Handles a deny/edit modal's MODAL_SUBMIT: the approval id comes from the modal's custom id and the
 * thread from the interaction's channel, and the gateway checks both again (who may decide, still pending,
 * this thread's record). An edit that does not validate is answered with an ephemeral error (the card stays
 * pending; the approver opens the form again); a refused submission gets an ephemeral notice; an accepted
 * one is acknowledged as an update of the card. Rejects only when Discord refuses the answer.
 */
export async function submitApprovalModal(
  interaction: ModalSubmitInteraction,
  inbound: ChatInbound,
  thread: ThreadRef,
  user: ChatUser,
): Promise<void> {
  const parsed = MODAL_IDS.parseForm(interaction.customId);
  if (!parsed) return;
  let text = "";
  try {
    text = interaction.fields.getTextInputValue(INPUT_ID);
  } catch {
    // A forged submission without our input: an empty reason / an invalid edit.
  }
  const reply = await inbound
    .button({
      thread,
      approvalId: parsed.approvalId,
      user,
      ...(parsed.form === "edit"
        ? { decision: "approve" as const, editedArguments: text }
        : { decision: "deny" as const, reason: text }),
    })
    .catch(() => ({
      kind: "notice" as const,
      text: "Couldn't save your decision right now; please try again.",
    }));
  if (reply.kind === "none") {
    await interaction.deferUpdate();
    return;
  }
  const content =
    reply.kind === "invalid"
      ? `Your edit was not applied; the card still waits.\n\`\`\`\n${reply.text.slice(0, 1800).replaceAll("```", "'''")}\n\`\`\``
      : reply.text;
  await interaction.reply({ content, flags: MessageFlags.Ephemeral });
}
