import { App, HTTPReceiver, type Receiver, SocketModeReceiver } from "@slack/bolt";
import type { ChatInbound, ChatOutbound, IncomingMessage, ThreadRef } from "../chat/index.js";
import { normalizeApiUrl, type SlackApi } from "./api.js";
import { parseApprovalAction } from "./approval-blocks.js";
import { boltLogger } from "./bolt-logger.js";
import {
  attachmentsOf,
  authorOf,
  baseEmoji,
  classifyMessageEvent,
  isDirectChannel,
  mentions,
  placeAllowed,
  type SlackMessageEvent,
  type SlackSelf,
  threadOfMessage,
  tsToMs,
  withoutBotMention,
} from "./events.js";
import { threadHistory } from "./history.js";
import { ExpiringMap, ThreadLookup, UserNames } from "./lookups.js";
import {
  allowed,
  DEFAULT_SLACK_API_URL,
  SILENT_SLACK_LOGGER,
  type SlackAccess,
  type SlackLogger,
} from "./options.js";
import type { RecipientStore } from "./recipients.js";

/** How the gateway connects to Slack: Socket Mode (app token) or the HTTP Events API (signing secret). */
export type SlackConnection =
  | {
      mode: "socket";
      appToken: string /** Ping timeout and reconnect back-off base, ms. Default 5000. */;
      pingTimeoutMs?: number;
    }
  | { mode: "http"; signingSecret: string; port: number };

/** Options of {@link SlackInbound}. */
export interface SlackInboundOptions {
  botToken: string;
  connection: SlackConnection;
  /** Web API base URL for bolt's clients (and the Socket Mode `apps.connections.open` call). */
  apiUrl?: string;
  api: SlackApi;
  /** Where private notices to button clickers go. */
  outbound: ChatOutbound;
  access: SlackAccess;
  /** Reaction names worth resolving (others are dropped early); all when undefined. */
  watchedReactions?: string[];
  recipients?: RecipientStore;
  log?: SlackLogger;
}

type Body = { team_id?: string; event_id?: string };
type ReactionPayload = {
  user?: string;
  reaction?: string;
  item?: { type?: string; channel?: string; ts?: string };
};
type ActionBody = {
  user?: { id?: string; team_id?: string };
  team?: { id?: string } | null;
  channel?: { id?: string };
  container?: { channel_id?: string; thread_ts?: string; message_ts?: string };
  message?: { ts?: string; thread_ts?: string };
};

/**
 * The gateway's Slack connection (bolt): normalizes `message` / `app_mention` events (edits and
 * deletions included), `reaction_added` / `_removed` and approval button clicks, checks them against the
 * allowlists, and hands them to {@link ChatInbound}. Bolt acknowledges every event before our handlers
 * run. Retried deliveries (same event id) are dropped here; the same message arriving as `app_mention`
 * and as `message` is dropped by message id (the gateway's intake dedupes again across processes).
 */
export class SlackInbound {
  private app: App | undefined;
  private self: SlackSelf = { userId: "", botId: undefined };
  private readonly log: SlackLogger;
  private readonly names: UserNames;
  private readonly threads: ThreadLookup;
  private readonly seenEvents = new ExpiringMap<true>(20_000, 10 * 60 * 1000);
  private readonly seenMessages = new ExpiringMap<true>(20_000, 10 * 60 * 1000);

  constructor(private readonly options: SlackInboundOptions) {
    this.log = options.log ?? SILENT_SLACK_LOGGER;
    this.names = new UserNames(options.api);
    this.threads = new ThreadLookup(options.api);
  }

  /** Identifies the bot (`auth.test`), connects and starts delivering events to `inbound`. */
  async start(inbound: ChatInbound): Promise<void> {
    const auth = await this.options.api.client.auth.test();
    this.self = { userId: String(auth.user_id ?? ""), botId: auth.bot_id ? String(auth.bot_id) : undefined };
    const app = new App({
      token: this.options.botToken,
      receiver: this.receiver(),
      clientOptions: { slackApiUrl: normalizeApiUrl(this.options.apiUrl ?? DEFAULT_SLACK_API_URL) },
      logger: boltLogger(this.log),
      // Our own filter sees the bot's messages first (to learn their threads); no conversation store needed.
      ignoreSelf: false,
      convoStore: false,
      botId: this.self.botId,
      botUserId: this.self.userId,
    });
    const guard = (what: string, work: () => Promise<void>) =>
      work().catch((err: unknown) => this.log.error({ err, event: what }, "slack: event handling failed"));
    app.event("message", ({ event, body }) =>
      guard("message", () => this.onMessage(inbound, event, body, false)),
    );
    app.event("app_mention", ({ event, body }) =>
      guard("app_mention", () => this.onMessage(inbound, event, body, true)),
    );
    app.event("reaction_added", ({ event, body }) =>
      guard("reaction", () => this.onReaction(inbound, event, body, true)),
    );
    app.event("reaction_removed", ({ event, body }) =>
      guard("reaction", () => this.onReaction(inbound, event, body, false)),
    );
    app.action(/^threadline:/, async ({ ack, body, action }) => {
      await ack();
      const actionId = (action as { action_id?: string }).action_id ?? "";
      await guard("button", () => this.onButton(inbound, body as ActionBody, actionId));
    });
    this.app = app;
    if (this.options.connection.mode === "http") await app.start(this.options.connection.port);
    else await app.start();
    this.log.info({ mode: this.options.connection.mode, botUserId: this.self.userId }, "slack: connected");
  }

  /** Disconnects (and closes the HTTP server). Idempotent. */
  async stop(): Promise<void> {
    const app = this.app;
    this.app = undefined;
    await app?.stop();
  }

  private receiver(): Receiver {
    const logger = boltLogger(this.log);
    const connection = this.options.connection;
    if (connection.mode === "http") {
      return new HTTPReceiver({ signingSecret: connection.signingSecret, port: connection.port, logger });
    }
    return new SocketModeReceiver({
      appToken: connection.appToken,
      logger,
      clientPingTimeout: connection.pingTimeoutMs ?? 5000,
      // A fresh object: the Socket Mode client adds its own retry policy for apps.connections.open.
      installerOptions: {
        clientOptions: { slackApiUrl: normalizeApiUrl(this.options.apiUrl ?? DEFAULT_SLACK_API_URL) },
      },
    });
  }

  private async onMessage(inbound: ChatInbound, raw: unknown, body: Body, isMention: boolean): Promise<void> {
    const team = body.team_id ?? "";
    if (body.event_id && !this.seenEvents.claim(body.event_id, true)) return;
    const kind = classifyMessageEvent(raw as SlackMessageEvent);
    if (kind.kind === "ignored") return;
    const { access } = this.options;
    if (kind.kind === "deleted") {
      const channel = (raw as SlackMessageEvent).channel ?? "";
      if (!placeAllowed(team, channel, isDirectChannel(channel), access)) return;
      await inbound.messageDeleted(
        { platform: "slack", workspace: team, channel, thread: kind.threadTs },
        kind.ts,
      );
      return;
    }
    const event = kind.message;
    const ts = event.ts ?? "";
    const channel = event.channel ?? "";
    if (kind.kind === "message") this.threads.remember(channel, ts, event.thread_ts ?? ts);
    const author = authorOf(event, this.self, access);
    const direct = isDirectChannel(channel, event.channel_type);
    if (author.kind !== "person" || !placeAllowed(team, channel, direct, access)) return;
    const text = event.text ?? "";
    const mentionsBot = isMention || direct || mentions(text, this.self.userId);
    // A top-level message that does not address the bot can never concern it.
    if (!mentionsBot && event.thread_ts === undefined) return;
    const thread = threadOfMessage(team, event);
    const message: IncomingMessage = {
      id: ts,
      thread,
      author: await this.names.user(team, author.id, author.isBot),
      text: withoutBotMention(text, this.self.userId),
      attachments: attachmentsOf(event.files),
      mentionsBot,
      sentAt: tsToMs(ts),
    };
    if (kind.kind === "edited") {
      await inbound.messageEdited(message);
      return;
    }
    const key = `${team}:${channel}:${ts}`;
    if (!this.seenMessages.claim(key, true)) return;
    try {
      if (mentionsBot && thread.thread !== ts) {
        const history = await threadHistory({
          ...this.options,
          names: this.names,
          self: this.self,
          thread,
          beforeTs: ts,
        });
        if (history.length > 0) message.history = history;
      }
      await Promise.all([this.rememberRecipient(thread, message), inbound.message(message)]);
    } catch (err) {
      // Let a retry of this event try again.
      this.seenMessages.delete(key);
      if (body.event_id) this.seenEvents.delete(body.event_id);
      throw err;
    }
  }

  private async rememberRecipient(thread: ThreadRef, message: IncomingMessage): Promise<void> {
    if (!message.mentionsBot || !this.options.recipients) return;
    await this.options.recipients
      .set(thread, message.author.id)
      .catch((err: unknown) => this.log.warn({ err }, "slack: could not record the stream recipient"));
  }

  private async onReaction(inbound: ChatInbound, raw: unknown, body: Body, added: boolean): Promise<void> {
    const event = raw as ReactionPayload;
    const team = body.team_id ?? "";
    if (body.event_id && !this.seenEvents.claim(body.event_id, true)) return;
    const { item, user } = event;
    if (item?.type !== "message" || !item.channel || !item.ts || !user || user === this.self.userId) return;
    const emoji = baseEmoji(event.reaction ?? "");
    const { access, watchedReactions } = this.options;
    if (watchedReactions && !watchedReactions.includes(emoji)) return;
    if (
      !placeAllowed(team, item.channel, isDirectChannel(item.channel), access) ||
      !allowed(access.users, user)
    ) {
      return;
    }
    const threadTs = await this.threads.threadOf(team, item.channel, item.ts);
    await inbound.reaction({
      thread: { platform: "slack", workspace: team, channel: item.channel, thread: threadTs },
      messageId: item.ts,
      user: await this.names.user(team, user),
      emoji,
      added,
    });
  }

  private async onButton(inbound: ChatInbound, body: ActionBody, actionId: string): Promise<void> {
    const parsed = parseApprovalAction(actionId);
    const userId = body.user?.id;
    const team = body.team?.id ?? body.user?.team_id ?? "";
    const channel = body.channel?.id ?? body.container?.channel_id ?? "";
    const threadTs = body.message?.thread_ts ?? body.container?.thread_ts ?? body.message?.ts;
    if (!parsed || !userId || !channel || !threadTs) return;
    if (!placeAllowed(team, channel, isDirectChannel(channel), this.options.access)) return;
    const thread: ThreadRef = { platform: "slack", workspace: team, channel, thread: threadTs };
    const reply = await inbound.button({
      thread,
      approvalId: parsed.approvalId,
      decision: parsed.decision,
      user: await this.names.user(team, userId),
    });
    if (reply.kind === "notice") await this.options.outbound.notify(thread, userId, reply.text);
  }
}
