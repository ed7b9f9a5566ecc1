import {
  type Channel,
  ChannelType,
  type Collection,
  cleanContent,
  type Attachment as DiscordAttachment,
  type GuildMember,
  type Message,
  type PartialMessage,
  type User,
} from "discord.js";
import type { Attachment, ChatUser } from "../chat/index.js";
import type { ChannelPlace } from "./threads.js";

/** Where `channel` is, for conversations (see {@link ChannelPlace}). Null or uncached channels are `other`. */
export function placeOf(channel: Channel | null | undefined): ChannelPlace {
  if (!channel) return { kind: "other" };
  switch (channel.type) {
    case ChannelType.DM:
      return { kind: "dm", channelId: channel.id };
    case ChannelType.GuildText:
    case ChannelType.GuildAnnouncement:
      return { kind: "text", guildId: channel.guildId, channelId: channel.id };
    case ChannelType.PublicThread:
    case ChannelType.PrivateThread:
    case ChannelType.AnnouncementThread: {
      const parentType = channel.parent?.type;
      return {
        kind: "thread",
        guildId: channel.guildId,
        threadId: channel.id,
        parentId: channel.parentId ?? channel.id,
        forum: parentType === ChannelType.GuildForum || parentType === ChannelType.GuildMedia,
      };
    }
    default:
      return { kind: "other" };
  }
}

/** The channel ids the access rules look at: the channel and, for threads, its parent. */
export function channelIdsOf(place: ChannelPlace): string[] {
  switch (place.kind) {
    case "dm":
    case "text":
      return [place.channelId];
    case "thread":
      return [place.threadId, place.parentId];
    default:
      return [];
  }
}

/** `<@id>`, `<@!id>` for the bot user, and `<@&role>` for the bot's own managed role. */
function botMentionPattern(botId: string, botRoleIds: readonly string[]): RegExp {
  const roles = botRoleIds.map((id) => `|<@&${id}>`).join("");
  return new RegExp(`<@!?${botId}>${roles}`, "g");
}

/** The role ids of `message`'s guild that Discord manages for the bot (mentioning one addresses the bot). */
export function botRoleIds(message: Message | PartialMessage, botId: string): string[] {
  const roles = message.guild?.roles.cache;
  if (!roles) return [];
  return [...roles.values()].filter((role) => role.tags?.botId === botId).map((role) => role.id);
}

/** True when the content addresses the bot directly (its user or managed role; not @everyone or reply pings). */
export function mentionsBotIn(content: string, botId: string, roleIds: readonly string[]): boolean {
  return botMentionPattern(botId, roleIds).test(content);
}

/**
 * The text the agent reads: the bot's own mentions removed, other user, role and channel mentions shown
 * as `@name` / `#name` (from discord.js's cache), custom emoji as `:name:`, trimmed.
 */
export function messageText(
  message: Message | PartialMessage,
  botId: string,
  roleIds: readonly string[],
): string {
  const content = (message.content ?? "").replace(botMentionPattern(botId, roleIds), " ");
  const cleaned = message.channel ? cleanContent(content, message.channel) : content;
  return cleaned.replace(/^[ \t]+|[ \t]+$/gm, "").trim();
}

/** A display name: server nickname, then global display name, then user name. */
export function displayName(user: User | null | undefined, member?: GuildMember | null): string {
  return member?.displayName ?? user?.globalName ?? user?.username ?? user?.id ?? "someone";
}

/** The chat user behind a discord.js user (and member, in guilds). */
export function chatUser(user: User, member?: GuildMember | null, botId?: string): ChatUser {
  const isBot = user.bot === true || user.id === botId;
  return isBot
    ? { id: user.id, name: displayName(user, member), isBot }
    : { id: user.id, name: displayName(user, member) };
}

/** Files shared with a message, listed (not downloaded). */
export function attachmentsOf(attachments: Collection<string, DiscordAttachment> | undefined): Attachment[] {
  if (!attachments) return [];
  return [...attachments.values()].map((file) => {
    const entry: Attachment = { name: file.name, url: file.url, sizeBytes: file.size };
    if (file.contentType) entry.mimeType = file.contentType;
    return entry;
  });
}

/** The member's role ids (empty outside guilds or when unknown). */
export function roleIdsOf(member: GuildMember | null | undefined): string[] {
  return member ? [...member.roles.cache.keys()] : [];
}
