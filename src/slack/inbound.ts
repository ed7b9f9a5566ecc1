import { App, HTTPReceiver, type Receiver, SocketModeReceiver } from "@slack/bolt";
import {
  type AckGate,
  type ChatInbound,
  type ChatOutbound,
  DeliveryDedupe,
  type IncomingMessage,
  type ThreadRef,
  ThreadSerial,
} from "../chat/index.js";
import { FeedbackRecorder, type SlackFeedback } from "./answer-feedback.js";
import { normalizeApiUrl, type SlackApi } from "./api.js";
import { parseApprovalAction } from "./approval-blocks.js";
import {
  APPROVAL_FORM_CALLBACK_ID,
  type ApprovalModalDeps,
  openApprovalForm,
  parseApprovalFormAction,
  submitApprovalForm,
  type ViewSubmissionBody,
} from "./approval-modal.js";
import { boltLogger } from "./bolt-logger.js";
import { DeferredAckReceiver } from "./deferred-ack.js";
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
import { FEEDBACK_ACTION_ID } from "./feedback-blocks.js";
import type { FeedbackLedger } from "./feedback-ledger.js";
import { type HistoryFetch, threadHistory } from "./history.js";
import { ExpiringMap, ThreadLookup, UserNames } from "./lookups.js";
import { setSessionStatus } from "./native-stream.js";
import {
  allowed,
  DEFAULT_SLACK_API_URL,
  SILENT_SLACK_LOGGER,
  type SlackAccess,
  type SlackLogger,
} from "./options.js";
import { type RecipientStore, sessionTitle } from "./recipients.js";
import { memorySeenMessages, type SeenMessages } from "./seen-messages.js";
import {
  type AssistantThreadStartedPayload,
  type HomeOpenedPayload,
  PromptSuggester,
  type SlackSuggestedPrompts,
} from "./suggested-prompts.js";

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
  /** The acknowledgements (👀) on their way: an event's handling waits for those asked for before it. */
  acks?: AckGate;
  /** Where private notices to button clickers go. */
  outbound: ChatOutbound;
  access: SlackAccess;
  /** Reaction names worth resolving (others are dropped early); all when undefined. */
  watchedReactions?: string[];
  recipients?: RecipientStore;
  /** The threads' messages the gateway received (history without asking Slack). Default: this process only. */
  seen?: SeenMessages;
  /** The client of `conversations.replies` (no retries: a refused lookup is not waited for). Default `api`. */
  historyApi?: SlackApi;
  /** How an unseen thread is read from Slack (page size of the app's tier). */
  historyFetch?: Partial<HistoryFetch>;
  /** Offered when someone opens a DM with the bot. Default: none. */
  suggestedPrompts?: SlackSuggestedPrompts;
  /** Called once per recorded 👍 / 👎 click (after its log line); must not throw. */
  onFeedback?: (feedback: SlackFeedback) => void;
  /** Where repeated feedback clicks are recognized. Default: in this process only. */
  feedbackLedger?: FeedbackLedger;
  log?: SlackLogger;
}

type Body = { team_id?: string; event_id?: string };
type ReactionPayload = {
  user?: string;
  reaction?: string;
  item?: { type?: string; channel?: string; ts?: string };
};
/** `agent_session_stopped` (https://docs.slack.dev/reference/events/agent_session_stopped); team on the envelope. */
type SessionStoppedPayload = {
  channel?: string;
  thread_ts?: string;
  user?: string;
  streaming_message_ts?: string[];
};
type ActionBody = {
  user?: { id?: string; team_id?: string };
  team?: { id?: string } | null;
  channel?: { id?: string };
  container?: { channel_id?: string; thread_ts?: string; message_ts?: string };
  message?: { ts?: string; thread_ts?: string };
  trigger_id?: string;
};
type ActionPayload = { action_id?: string; block_id?: string; value?: string };

/** HTTP mode: answer non-2xx after this long if the event is not stored yet (Slack waits 3 s). */
const HTTP_ACK_DEADLINE_MS = 2500;

/**
 * The gateway's Slack connection (bolt): normalizes `message` / `app_mention` events (edits and
 * deletions included), `reaction_added` / `_removed` and approval button clicks, checks them against the
 * allowlists, and hands them to {@link ChatInbound}. An event is acknowledged to Slack only once the
 * gateway is done with it (stored, or visibly given up); until then Socket Mode withholds the ack and
 * HTTP mode answers 500 after {@link HTTP_ACK_DEADLINE_MS}, so Slack delivers it again
 * ({@link DeferredAckReceiver}). A redelivery (same event id), and the same message arriving as
 * `app_mention` and as `message`, join the handling already under way instead of starting another (the
 * gateway's intake dedupes again across processes). The events of one thread reach the gateway in the
 * order they arrived, history lookups included ({@link ThreadSerial}).
 */
export class SlackInbound {
  private app: App | undefined;
  private self: SlackSelf = { userId: "", botId: undefined };
  private readonly log: SlackLogger;
  private readonly names: UserNames;
  private readonly threads: ThreadLookup;
  private readonly serial: ThreadSerial;
  /** Handling of an event id / a message, in flight or done (a rejected one is forgotten, to be retried). */
  private readonly seenEvents = new DeliveryDedupe();
  private readonly seenMessages = new DeliveryDedupe();
  private readonly feedback: FeedbackRecorder;
  private readonly seen: SeenMessages;
  /** Messages already recorded in {@link seen} (a mention arrives as `app_mention` and as `message`). */
  private readonly recorded = new ExpiringMap<true>(20_000, 10 * 60 * 1000);
  /** Where events go; set by {@link SlackInbound.start} (the receiver acknowledges mentions through it). */
  private inbound: ChatInbound | undefined;
  /**
   * Mentions already acknowledged on arrival: their second delivery (`message` and `app_mention`) or a
   * retry does not react again (each reaction costs Slack's reactions.add budget).
   */
  private readonly acknowledged = new ExpiringMap<true>(20_000, 10 * 60 * 1000);

  constructor(private readonly options: SlackInboundOptions) {
    this.log = options.log ?? SILENT_SLACK_LOGGER;
    this.names = new UserNames(options.api);
    this.seen = options.seen ?? memorySeenMessages();
    this.threads = new ThreadLookup(options.historyApi ?? options.api, this.seen);
    this.feedback = new FeedbackRecorder(this.log, options.onFeedback, options.feedbackLedger);
    this.serial = new ThreadSerial({
      onHeld: (thread) =>
        this.log.warn(
          { thread: thread.thread },
          "slack: an event held its thread too long; the next goes on",
        ),
    });
  }

  /** Identifies the bot (`auth.test`), connects and starts delivering events to `inbound`. */
  async start(inbound: ChatInbound): Promise<void> {
    const auth = await this.options.api.client.auth.test();
    this.self = { userId: String(auth.user_id ?? ""), botId: auth.bot_id ? String(auth.bot_id) : undefined };
    this.inbound = inbound;
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
    // Events: a failure is logged and rethrown, so the event stays unacknowledged and Slack redelivers it.
    const handle = (what: string, body: Body, work: () => Promise<void>) =>
      work().catch((err: unknown) => {
        this.log.warn(
          { err, event: what, eventId: body.event_id },
          "slack: event not handled; Slack will redeliver",
        );
        throw err;
      });
    app.error(async (err) => {
      throw err;
    });
    app.event("message", ({ event, body }) =>
      handle("message", body, () => this.onMessage(inbound, event, body, false)),
    );
    app.event("app_mention", ({ event, body }) =>
      handle("app_mention", body, () => this.onMessage(inbound, event, body, true)),
    );
    app.event("reaction_added", ({ event, body }) =>
      handle("reaction", body, () => this.onReaction(inbound, event, body, true)),
    );
    app.event("reaction_removed", ({ event, body }) =>
      handle("reaction", body, () => this.onReaction(inbound, event, body, false)),
    );
    app.event("agent_session_stopped", ({ event, body }) =>
      handle("agent_session_stopped", body, () => this.onSessionStopped(inbound, event, body)),
    );
    const suggester = new PromptSuggester(
      this.options.api,
      this.options.suggestedPrompts ?? { title: "", prompts: [] },
      this.options.access,
      this.log,
    );
    app.event("app_home_opened", ({ event, body }) =>
      guard("app_home_opened", () => suggester.homeOpened(body.team_id ?? "", event as HomeOpenedPayload)),
    );
    app.event("assistant_thread_started", ({ event, body }) =>
      guard("assistant_thread_started", () =>
        suggester.threadStarted(body.team_id ?? "", event as AssistantThreadStartedPayload),
      ),
    );
    app.action(/^threadline:/, async ({ ack, body, action }) => {
      await ack();
      const payload = action as ActionPayload;
      const actionId = payload.action_id ?? "";
      if (actionId === FEEDBACK_ACTION_ID) this.onFeedback(body as ActionBody, payload);
      else if (parseApprovalFormAction(actionId)) {
        await guard("approval form", () => this.onFormButton(inbound, body as ActionBody, actionId));
      } else await guard("button", () => this.onButton(inbound, body as ActionBody, actionId));
    });
    // Deny with a reason / edit and approve: the modal's submission is answered with its ack (errors inline).
    app.view(APPROVAL_FORM_CALLBACK_ID, async ({ ack, body }) => {
      await ack(await submitApprovalForm(this.modalDeps(), inbound, body as ViewSubmissionBody));
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
      const http = new HTTPReceiver({
        signingSecret: connection.signingSecret,
        port: connection.port,
        logger,
        // Not stored (yet): a 500 makes Slack retry the delivery (X-Slack-Retry-Num); the cause is logged.
        processEventErrorHandler: async ({ response }) => {
          if (!response.headersSent) response.writeHead(500).end();
          return false;
        },
        // Our own deadline always answers first; bolt's 3 s fallback has nothing left to do.
        unhandledRequestHandler: ({ response }) => {
          if (!response.headersSent) response.writeHead(500).end();
        },
      });
      return new DeferredAckReceiver(http, {
        deadlineMs: HTTP_ACK_DEADLINE_MS,
        log: this.log,
        onEvent: (body) => this.arrived(body),
        hold: () => this.options.acks?.hold(),
      });
    }
    const socket = new SocketModeReceiver({
      appToken: connection.appToken,
      logger,
      clientPingTimeout: connection.pingTimeoutMs ?? 5000,
      // A fresh object: the Socket Mode client adds its own retry policy for apps.connections.open.
      installerOptions: {
        clientOptions: { slackApiUrl: normalizeApiUrl(this.options.apiUrl ?? DEFAULT_SLACK_API_URL) },
      },
      // Not stored: no ack, so Slack redelivers the envelope; the cause is logged by the listener.
      processEventErrorHandler: async () => false,
    });
    return new DeferredAckReceiver(socket, {
      log: this.log,
      onEvent: (body) => this.arrived(body),
      hold: () => this.options.acks?.hold(),
    });
  }

  /**
   * An event as it arrives, before bolt's middleware runs: a mention is acknowledged (👀) right here, so
   * its reaction is not queued behind the handling of every event that arrived with it. Never throws.
   */
  private arrived(body: Record<string, unknown>): void {
    const raw = body.event as (SlackMessageEvent & { type?: string }) | undefined;
    if (!raw || (raw.type !== "message" && raw.type !== "app_mention")) return;
    const team = typeof body.team_id === "string" ? body.team_id : "";
    const mention = this.mentionOf(classifyMessageEvent(raw), team, raw.type === "app_mention");
    if (!mention || !this.acknowledged.claim(`${team}:${mention.thread.channel}:${mention.ts}`, true)) return;
    void this.inbound?.acknowledge?.(mention.thread, mention.ts, mention.authorId);
  }

  /** The new message from a person, in an allowed place, that mentions the bot (or is a DM to it). */
  private mentionOf(
    kind: ReturnType<typeof classifyMessageEvent>,
    team: string,
    isMention: boolean,
  ): { thread: ThreadRef; ts: string; authorId: string } | undefined {
    if (kind.kind !== "message") return undefined;
    const event = kind.message;
    const channel = event.channel ?? "";
    const author = authorOf(event, this.self, this.options.access);
    const direct = isDirectChannel(channel, event.channel_type);
    if (author.kind !== "person" || !placeAllowed(team, channel, direct, this.options.access))
      return undefined;
    if (!isMention && !direct && !mentions(event.text ?? "", this.self.userId)) return undefined;
    return { thread: threadOfMessage(team, event), ts: event.ts ?? "", authorId: author.id };
  }

  private onMessage(inbound: ChatInbound, raw: unknown, body: Body, isMention: boolean): Promise<void> {
    const work = () => this.message(inbound, raw as SlackMessageEvent, body.team_id ?? "", isMention);
    return body.event_id ? this.seenEvents.run(body.event_id, work) : work();
  }

  /** Sorts a message event and queues its handling on its thread, in arrival order. */
  private async message(
    inbound: ChatInbound,
    raw: SlackMessageEvent,
    team: string,
    isMention: boolean,
  ): Promise<void> {
    const kind = classifyMessageEvent(raw);
    if (kind.kind === "ignored") return;
    const { access } = this.options;
    if (kind.kind === "deleted") {
      const channel = raw.channel ?? "";
      if (!placeAllowed(team, channel, isDirectChannel(channel), access)) return;
      const thread: ThreadRef = { platform: "slack", workspace: team, channel, thread: kind.threadTs };
      this.record(thread, "deleted", { ts: kind.ts }, false);
      await this.serial.run(thread, () => inbound.messageDeleted(thread, kind.ts));
      return;
    }
    const event = kind.message;
    const ts = event.ts ?? "";
    const channel = event.channel ?? "";
    if (kind.kind === "message") this.threads.remember(channel, ts, event.thread_ts ?? ts);
    const author = authorOf(event, this.self, access);
    const direct = isDirectChannel(channel, event.channel_type);
    if (!placeAllowed(team, channel, direct, access)) return;
    const op = kind.kind === "edited" ? "edited" : "message";
    if (op === "edited" || this.recorded.claim(`${team}:${channel}:${ts}`, true)) {
      this.record(threadOfMessage(team, event), op, event, author.kind === "self");
    }
    if (author.kind !== "person") return;
    const text = event.text ?? "";
    const mentionsBot = isMention || direct || mentions(text, this.self.userId);
    // A top-level message that does not address the bot can never concern it.
    if (!mentionsBot && event.thread_ts === undefined) return;
    const thread = threadOfMessage(team, event);
    const incoming = async (): Promise<IncomingMessage> => ({
      id: ts,
      thread,
      author: await this.names.user(team, author.id, author.isBot),
      text: withoutBotMention(text, this.self.userId),
      attachments: attachmentsOf(event.files),
      mentionsBot,
      sentAt: tsToMs(ts),
    });
    if (kind.kind === "edited") {
      await this.serial.run(thread, async () => inbound.messageEdited(await incoming()));
      return;
    }
    // The thread's order is fixed here, on arrival: the name and history lookups wait in line. The 👀
    // does not: it was asked for on arrival ({@link SlackInbound.arrived}), before any lookup.
    await this.seenMessages.run(`${team}:${channel}:${ts}`, () =>
      this.serial.run(thread, async () => {
        const message = await incoming();
        if (mentionsBot && thread.thread !== ts) {
          const history = await threadHistory({
            ...this.options,
            api: this.options.historyApi ?? this.options.api,
            seen: this.seen,
            ...(this.options.historyFetch ? { fetch: this.options.historyFetch } : {}),
            names: this.names,
            self: this.self,
            thread,
            beforeTs: ts,
          });
          if (history.length > 0) message.history = history;
        }
        await Promise.all([this.rememberRecipient(thread, message), inbound.message(message)]);
      }),
    );
  }

  /**
   * Keeps the message for later mentions' history. Started on arrival (not awaited: intake never waits for
   * it); Redis runs one connection's commands in order, so a later mention's read finds it.
   */
  private record(
    thread: ThreadRef,
    op: "message" | "edited" | "deleted",
    message: SlackMessageEvent,
    self: boolean,
  ): void {
    this.seen
      .record(thread, op, message, { self })
      .catch((err: unknown) => this.log.warn({ err }, "slack: could not record a thread's message"));
  }

  private async rememberRecipient(thread: ThreadRef, message: IncomingMessage): Promise<void> {
    const recipients = this.options.recipients;
    if (!message.mentionsBot || !recipients) return;
    const title = sessionTitle(message.text, `Request from ${message.author.name}`);
    await Promise.all([recipients.set(thread, message.author.id), recipients.setTitle(thread, title)]).catch(
      (err: unknown) => this.log.warn({ err }, "slack: could not record the stream recipient"),
    );
  }

  private onSessionStopped(inbound: ChatInbound, raw: unknown, body: Body): Promise<void> {
    const work = () => this.sessionStopped(inbound, raw as SessionStoppedPayload, body.team_id ?? "");
    return body.event_id ? this.seenEvents.run(body.event_id, work) : work();
  }

  /**
   * Slack's native Stop button: the same stop request as 🛑 from that user (the gateway applies the same
   * permission rule). Slack has already stopped the streams it lists; the worker continues a refused
   * run's reply in new messages and moves the session away from `processing` when the run ends.
   */
  private async sessionStopped(inbound: ChatInbound, event: SessionStoppedPayload, team: string) {
    const { channel, thread_ts: threadTs, user } = event;
    if (!channel || !threadTs || !user || !inbound.stop) return;
    const { access } = this.options;
    if (!placeAllowed(team, channel, isDirectChannel(channel), access) || !allowed(access.users, user))
      return;
    const thread: ThreadRef = { platform: "slack", workspace: team, channel, thread: threadTs };
    const stop = inbound.stop.bind(inbound);
    const outcome = await this.serial.run(thread, async () =>
      stop(thread, await this.names.user(team, user)),
    );
    // Nothing ran (a worker that died mid-run left the session "processing"): no worker will move the
    // session on, and Slack keeps showing a Stop button that does nothing. Settle it here.
    if (outcome === "idle") await this.settleIdleSession(thread);
  }

  /** Sets an idle thread's agent session `active` (best effort, logged). */
  private async settleIdleSession(thread: ThreadRef): Promise<void> {
    try {
      await setSessionStatus(this.options.api, thread, "active");
    } catch (err) {
      this.log.warn({ team: thread.workspace, err: String(err) }, "slack: could not settle an idle session");
    }
  }

  private onReaction(inbound: ChatInbound, raw: unknown, body: Body, added: boolean): Promise<void> {
    const work = () => this.reaction(inbound, raw as ReactionPayload, body.team_id ?? "", added);
    return body.event_id ? this.seenEvents.run(body.event_id, work) : work();
  }

  private async reaction(inbound: ChatInbound, event: ReactionPayload, team: string, added: boolean) {
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
    const thread: ThreadRef = { platform: "slack", workspace: team, channel: item.channel, thread: threadTs };
    await this.serial.run(thread, async () =>
      inbound.reaction({
        thread,
        messageId: item.ts!,
        user: await this.names.user(team, user),
        emoji,
        added,
      }),
    );
  }

  /** A 👍 / 👎 click, recorded by {@link FeedbackRecorder} (allowlists applied). */
  private onFeedback(body: ActionBody, action: ActionPayload): void {
    const userId = body.user?.id;
    const team = body.team?.id ?? body.user?.team_id ?? "";
    const channel = body.channel?.id ?? body.container?.channel_id ?? "";
    const messageTs = body.container?.message_ts ?? body.message?.ts;
    const threadTs = body.message?.thread_ts ?? body.container?.thread_ts ?? messageTs;
    if (!userId || !channel || !threadTs || !messageTs) return;
    const { access } = this.options;
    if (!placeAllowed(team, channel, isDirectChannel(channel), access) || !allowed(access.users, userId))
      return;
    void this.feedback.record({ team, channel, threadTs, messageTs, userId, action });
  }

  private modalDeps(): ApprovalModalDeps {
    const { api, outbound, access } = this.options;
    return { api, outbound, access, user: (team, userId) => this.names.user(team, userId) };
  }

  private async onFormButton(inbound: ChatInbound, body: ActionBody, actionId: string): Promise<void> {
    const parsed = parseApprovalFormAction(actionId)!;
    const userId = body.user?.id;
    const team = body.team?.id ?? body.user?.team_id ?? "";
    const channel = body.channel?.id ?? body.container?.channel_id ?? "";
    const threadTs = body.message?.thread_ts ?? body.container?.thread_ts ?? body.message?.ts;
    if (!userId || !channel || !threadTs || !body.trigger_id) return;
    if (!placeAllowed(team, channel, isDirectChannel(channel), this.options.access)) return;
    const thread: ThreadRef = { platform: "slack", workspace: team, channel, thread: threadTs };
    await openApprovalForm(this.modalDeps(), inbound, {
      thread,
      userId,
      triggerId: body.trigger_id,
      ...parsed,
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
