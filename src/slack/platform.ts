import type { RetryOptions, WebClientOptions } from "@slack/web-api";
import { WebClient } from "@slack/web-api";
import { AckGate, type ChatInbound, type ChatPlatform, type ThreadRef } from "../chat/index.js";
import type { SlackFeedback } from "./answer-feedback.js";
import { createSlackClient, SlackApi, slackClientOptions } from "./api.js";
import type { FeedbackLedger } from "./feedback-ledger.js";
import { type SlackConnection, SlackInbound } from "./inbound.js";
import { OPEN_ACCESS, SILENT_SLACK_LOGGER, type SlackAccess, type SlackLogger } from "./options.js";
import { SlackOutbound } from "./outbound.js";
import {
  SLACK_HISTORY_TIERS,
  type SlackHistoryTier,
  type SlackRateLimiter,
  UNLIMITED,
} from "./rate-limit.js";
import type { RecipientStore } from "./recipients.js";
import type { SeenMessages } from "./seen-messages.js";
import type { SlackSuggestedPrompts } from "./suggested-prompts.js";

/** Options of {@link createSlackPlatform}. */
export interface SlackPlatformOptions {
  /** Bot token (`xoxb-…`). */
  botToken: string;
  /**
   * How the gateway receives events. Needed only by processes that call `start` (the gateway); workers
   * never connect.
   */
  connection?: SlackConnection;
  /** Web API base URL (`SLACK_API_URL`); default Slack's. Used by every client: bolt, Socket Mode, workers. */
  apiUrl?: string;
  /** Shared method budgets (Redis-backed in production). Default: unlimited. */
  rateLimiter?: SlackRateLimiter;
  /** Allowlists; default: everyone, no other bots. */
  access?: SlackAccess;
  /** Reaction names the gateway acts on (others are dropped before any lookup). Default: all. */
  watchedReactions?: string[];
  /** Recipients of native streams, shared between gateway and workers. Without it, replies in channels are posted and edited. */
  recipients?: RecipientStore;
  /** The threads' messages the gateway received, shared by gateway instances (history without Slack calls). */
  seenMessages?: SeenMessages;
  /**
   * The app's `conversations.replies` tier (`SLACK_HISTORY_TIER`): its page size here; give the same tier's
   * budget to the rate limiter ({@link historyBudgets}). Default `non-marketplace`.
   */
  historyTier?: SlackHistoryTier;
  /** Native streaming where the workspace supports it. Default `true`. */
  streaming?: boolean;
  /** WebClient retry policy (tests shorten it). */
  retry?: RetryOptions;
  /**
   * The HTTP `fetch` of the workers' and the gateway's Web API calls; the app passes the one the model client
   * uses too (`createHttpFetch`, `src/http/fetch.ts`: undici's keep-alive `Agent`, less CPU per call than
   * Node's global `fetch`). Default: the global `fetch`.
   */
  fetch?: WebClientOptions["fetch"];
  /** 👍 / 👎 buttons under each run's answer. Default `true`. */
  feedback?: boolean;
  /** Offered when someone opens a DM with the bot (gateway). Default: none. */
  suggestedPrompts?: SlackSuggestedPrompts;
  /** The gateway calls it once per recorded feedback click (after logging it); must not throw. */
  onFeedback?: (feedback: SlackFeedback) => void;
  /** Where repeated feedback clicks are recognized: shared by every gateway in Redis. Default: per process. */
  feedbackLedger?: FeedbackLedger;
  /** The run now active in a thread (workers), to name it in the feedback buttons. Default: unknown. */
  runIdOf?: (thread: ThreadRef) => Promise<string | undefined>;
  log?: SlackLogger;
}

/**
 * Threadline on Slack: `outbound` is the workers' REST client ({@link SlackOutbound}); `start` connects
 * the gateway with bolt (Socket Mode or HTTP) and delivers normalized events to the given
 * {@link ChatInbound}. `stop` disconnects; idempotent.
 * @throws Error from `start` when no `connection` was given or Slack rejects the bot token.
 */
export function createSlackPlatform(options: SlackPlatformOptions): ChatPlatform {
  const log = options.log ?? SILENT_SLACK_LOGGER;
  const clientOptions: Parameters<typeof createSlackClient>[0] = { token: options.botToken, log };
  if (options.apiUrl !== undefined) clientOptions.apiUrl = options.apiUrl;
  if (options.retry !== undefined) clientOptions.retry = options.retry;
  if (options.fetch !== undefined) clientOptions.fetch = options.fetch;
  // The gateway's acknowledgements leave before the intake work of the events that came with them.
  const acks = options.connection ? new AckGate() : undefined;
  const api = new SlackApi(createSlackClient(clientOptions), options.rateLimiter ?? UNLIMITED, acks);
  const outboundOptions: ConstructorParameters<typeof SlackOutbound>[0] = { api, log };
  if (options.streaming !== undefined) outboundOptions.streaming = options.streaming;
  if (options.recipients !== undefined) outboundOptions.recipients = options.recipients;
  if (options.feedback !== undefined) outboundOptions.feedback = options.feedback;
  if (options.runIdOf !== undefined) outboundOptions.runIdOf = options.runIdOf;
  const outbound = new SlackOutbound(outboundOptions);
  let inbound: SlackInbound | undefined;
  return {
    platform: "slack",
    outbound,
    async start(target: ChatInbound) {
      if (!options.connection)
        throw new Error("Slack: no connection configured (SLACK_APP_TOKEN or SLACK_SIGNING_SECRET)");
      const inboundOptions: ConstructorParameters<typeof SlackInbound>[0] = {
        botToken: options.botToken,
        connection: options.connection,
        api,
        outbound,
        access: options.access ?? OPEN_ACCESS,
        log,
      };
      if (acks !== undefined) inboundOptions.acks = acks;
      if (options.apiUrl !== undefined) inboundOptions.apiUrl = options.apiUrl;
      if (options.watchedReactions !== undefined) inboundOptions.watchedReactions = options.watchedReactions;
      if (options.recipients !== undefined) inboundOptions.recipients = options.recipients;
      if (options.onFeedback !== undefined) inboundOptions.onFeedback = options.onFeedback;
      if (options.feedbackLedger !== undefined) inboundOptions.feedbackLedger = options.feedbackLedger;
      if (options.suggestedPrompts !== undefined) inboundOptions.suggestedPrompts = options.suggestedPrompts;
      if (options.seenMessages !== undefined) inboundOptions.seen = options.seenMessages;
      // History is never waited for: no retries, and a 429 fails at once instead of sleeping Retry-After.
      const historyClient = new WebClient(options.botToken, {
        ...slackClientOptions({ ...clientOptions, retry: { retries: 0 } }),
        rejectRateLimitedCalls: true,
      });
      inboundOptions.historyApi = new SlackApi(historyClient, options.rateLimiter ?? UNLIMITED);
      inboundOptions.historyFetch = {
        pageSize: SLACK_HISTORY_TIERS[options.historyTier ?? "non-marketplace"].pageSize,
      };
      inbound = new SlackInbound(inboundOptions);
      await inbound.start(target);
    },
    async stop() {
      await inbound?.stop();
      inbound = undefined;
    },
  };
}
