import { OAuth2Scopes, PermissionFlagsBits } from "discord.js";

/**
 * Exactly the permissions the bot uses: read channels and their history (thread context), post, post in
 * threads, start threads on a mention, react (the 👀 / 🧭 / ⏳ / ✅ marks) and embed links (approval
 * cards are embeds).
 */
export const BOT_PERMISSIONS: bigint =
  PermissionFlagsBits.ViewChannel |
  PermissionFlagsBits.SendMessages |
  PermissionFlagsBits.SendMessagesInThreads |
  PermissionFlagsBits.CreatePublicThreads |
  PermissionFlagsBits.ReadMessageHistory |
  PermissionFlagsBits.AddReactions |
  PermissionFlagsBits.EmbedLinks;

/** The OAuth2 URL that adds the bot to a server with {@link BOT_PERMISSIONS}. */
export function inviteUrl(applicationId: string): string {
  const query = new URLSearchParams({
    client_id: applicationId,
    scope: OAuth2Scopes.Bot,
    permissions: BOT_PERMISSIONS.toString(),
  });
  return `https://discord.com/oauth2/authorize?${query.toString()}`;
}
