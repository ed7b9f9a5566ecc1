/**
 * The Discord adapter: discord.js gateway inbound (threads, reactions, approval buttons) and REST outbound
 * (streamed replies, typing, reactions, approval cards) under a Redis-shared global REST budget.
 */
export { type DiscordAccess, isAllowed, OPEN_ACCESS } from "./access.js";
export { approvalCustomId, approvalMessageBody, parseApprovalCustomId } from "./approval-card.js";
export { DEFAULT_HISTORY_LIMITS, type HistoryLimits, historyFromMessages } from "./history.js";
export { BOT_PERMISSIONS, inviteUrl } from "./invite.js";
export type { DiscordLogger } from "./logger.js";
export {
  DISCORD_EDIT_INTERVAL_MS,
  DISCORD_MAX_MESSAGE_CHARS,
  DISCORD_TYPING_RENEW_MS,
  DiscordOutbound,
  type DiscordOutboundOptions,
} from "./outbound.js";
export {
  createDiscordPlatform,
  DISCORD_INTENTS,
  type DiscordPlatform,
  type DiscordPlatformOptions,
  type DiscordShards,
} from "./platform.js";
export {
  createDiscordRest,
  type DiscordRestOptions,
  discordRestOptions,
  PRIORITY_HEADER,
  requestPriority,
} from "./rest.js";
export {
  createRedisRestBudget,
  type RedisRestBudgetOptions,
  type RequestPriority,
  type RestBudget,
  UNLIMITED_BUDGET,
} from "./rest-budget.js";
export { type ChannelPlace, channelOfMessage, DM_WORKSPACE, threadName, threadRefIn } from "./threads.js";
