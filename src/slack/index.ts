/**
 * Threadline on Slack: bolt inbound (Socket Mode or the HTTP Events API) for the gateway, a WebClient
 * outbound for workers (native streaming or post + edit, reactions, statuses, Block Kit approval cards),
 * shared per-workspace method budgets in Redis, and the allowlists.
 */

export type { SlackFeedback } from "./answer-feedback.js";
export { SLACK_RETRY, SlackApi, SlackApiError, slackClientOptions } from "./api.js";
export {
  APPROVAL_ACTION_PREFIX,
  approvalActionId,
  approvalBlocks,
  parseApprovalAction,
} from "./approval-blocks.js";
export {
  FEEDBACK_ACTION_ID,
  type FeedbackValue,
  feedbackBlock,
  parseFeedbackAction,
} from "./feedback-blocks.js";
export { type FeedbackLedger, memoryFeedbackLedger, redisFeedbackLedger } from "./feedback-ledger.js";
export type { SlackConnection } from "./inbound.js";
export { OPEN_ACCESS, type SlackAccess, type SlackLogger } from "./options.js";
export { SLACK_LIMITS, SlackOutbound, type SlackOutboundOptions } from "./outbound.js";
export { createSlackPlatform, type SlackPlatformOptions } from "./platform.js";
export {
  createRedisRateLimiter,
  historyBudgets,
  type MethodBudget,
  type RedisRateLimiterOptions,
  SLACK_HISTORY_TIERS,
  SLACK_METHOD_BUDGETS,
  type SlackHistoryTier,
  type SlackRateLimiter,
  UNLIMITED,
} from "./rate-limit.js";
export {
  memoryRecipientStore,
  type RecipientKeys,
  type RecipientStore,
  redisRecipientStore,
} from "./recipients.js";
export { memorySeenMessages, redisSeenMessages, type SeenMessages } from "./seen-messages.js";
export { mrkdwnToStreamMarkdown } from "./stream-markdown.js";
export {
  MAX_SUGGESTED_PROMPTS,
  type SlackPrompt,
  type SlackSuggestedPrompts,
} from "./suggested-prompts.js";
