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
}

/** The INTERACTION_CREATE payload of a button click (`type` 3, component type 2) on a message. */
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
    type: 3,
    token: interaction.token,
    version: 1,
    data: { custom_id: interaction.customId, component_type: 2 },
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
