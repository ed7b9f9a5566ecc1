import type { DiscordState, FakeChannel } from "./state.js";

/** One interaction the fake sent (a button click) and how the bot answered it. */
export interface FakeInteraction {
  id: string;
  token: string;
  userId: string;
  messageId: string;
  customId: string;
  /** `Date.now()` when INTERACTION_CREATE was dispatched. */
  createdAt: number;
  /** The callback the bot sent in time: its type (6 = deferred update) and when. */
  callback?: { type: number; at: number };
  /** Callback attempts Discord refused (too late: 10062; twice: 40060). */
  rejectedCallbacks: { code: number; at: number }[];
  /** Follow-up messages (interaction webhooks), with their flags (64 = ephemeral). */
  followUps: { content: string; flags: number; at: number }[];
  /** The callback's `data`: a modal (type 9) or a message reply (type 4, e.g. an ephemeral notice). */
  callbackData?: Record<string, unknown>;
  /** A MODAL_SUBMIT (type 5): the modal's custom id and the text inputs' values by custom id. */
  submission?: { customId: string; values: Record<string, string> };
}

/**
 * Why a modal answer (interaction callback type 9) is refused, or `undefined`. Discord's limits
 * (https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-modal):
 * `custom_id` ≤ 100 and `title` ≤ 45 characters, both required; 1 to 5 components, here action rows (type 1)
 * holding one text input (type 4) each; a text input
 * (https://discord.com/developers/docs/components/reference#text-input) has a `custom_id` ≤ 100, a
 * `style` 1 (short) or 2 (paragraph), a `label` ≤ 45, `max_length` ≤ 4000 and a `value` ≤ 4000 (within
 * `max_length`). A modal may only answer a component or command interaction, not a MODAL_SUBMIT.
 */
export function modalErrors(data: Record<string, unknown> | undefined, fromSubmit: boolean): string[] {
  const errors: string[] = [];
  if (fromSubmit) errors.push("a modal cannot answer a modal submission");
  if (!data) return [...errors, "data: required"];
  const text = (value: unknown, max: number, where: string) => {
    if (typeof value !== "string" || value === "") errors.push(`${where}: required`);
    else if ([...value].length > max) errors.push(`${where}: must be at most ${max} characters`);
  };
  text(data.custom_id, 100, "data.custom_id");
  text(data.title, 45, "data.title");
  const rows = Array.isArray(data.components) ? (data.components as Record<string, unknown>[]) : [];
  if (rows.length < 1 || rows.length > 5) errors.push("data.components: 1 to 5 components");
  rows.forEach((row, index) => {
    const inputs = Array.isArray(row.components) ? (row.components as Record<string, unknown>[]) : [];
    if (row.type !== 1 || inputs.length !== 1) {
      errors.push(`data.components.${index}: an action row with one text input`);
      return;
    }
    const input = inputs[0]!;
    const where = `data.components.${index}.components.0`;
    if (input.type !== 4) errors.push(`${where}.type: must be a text input (4)`);
    text(input.custom_id, 100, `${where}.custom_id`);
    text(input.label, 45, `${where}.label`);
    if (input.style !== 1 && input.style !== 2) errors.push(`${where}.style: 1 or 2`);
    const max = typeof input.max_length === "number" ? input.max_length : 4000;
    if (max > 4000) errors.push(`${where}.max_length: at most 4000`);
    if (typeof input.value === "string" && [...input.value].length > max) {
      errors.push(`${where}.value: longer than max_length`);
    }
  });
  return errors;
}

/**
 * The INTERACTION_CREATE payload of a button click (`type` 3, component type 2) on a message, or of a
 * MODAL_SUBMIT (`type` 5: the modal's `custom_id` and its action rows of `{ type: 4, custom_id, value }`,
 * with the message whose component opened the modal).
 */
export function interactionCreate(state: DiscordState, interaction: FakeInteraction, channel: FakeChannel) {
  const who = channel.guildId
    ? {
        guild_id: channel.guildId,
        member: { ...state.apiMember(channel.guildId, interaction.userId, true), permissions: "0" },
      }
    : { user: state.apiUser(interaction.userId) };
  return {
    id: interaction.id,
    application_id: state.applicationId,
    type: interaction.submission ? 5 : 3,
    token: interaction.token,
    version: 1,
    data: interaction.submission
      ? {
          custom_id: interaction.submission.customId,
          components: Object.entries(interaction.submission.values).map(([customId, value]) => ({
            type: 1,
            components: [{ type: 4, custom_id: customId, value }],
          })),
        }
      : { custom_id: interaction.customId, component_type: 2 },
    channel_id: channel.id,
    channel: state.apiChannel(channel.id),
    message: state.apiMessage(interaction.messageId),
    app_permissions: "0",
    locale: "en-US",
    entitlements: [],
    authorizing_integration_owners: {},
    context: channel.guildId ? 0 : 1,
    attachment_size_limit: 10_485_760,
    ...who,
  };
}
