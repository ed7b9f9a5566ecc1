import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { WebSocketServer } from "ws";
import { type Delivery, EventDelivery } from "./slack-events.js";
import { type FakeMessage, FakeSlackStore } from "./slack-store.js";
import { FAKE_STREAM_LIMITS, type FakeStreamClock } from "./slack-streams.js";
import { closeView, issueTrigger, viewSubmission } from "./slack-views.js";
import {
  type ApiReply,
  FAKE_HISTORY_TIERS,
  type FakeSlackConfig,
  handleWebApi,
  parseArgs,
} from "./slack-web-api.js";

export type { FakeMessage } from "./slack-store.js";

/** A per-workspace method budget the fake enforces with HTTP 429 (fixed windows from the first call). */
export interface FakeRateLimit {
  limit: number;
  windowMs: number;
  perChannel?: boolean;
}

/** Options of {@link FakeSlackServer.start}. */
export interface FakeSlackOptions extends Partial<FakeSlackConfig> {
  signingSecret?: string;
  /** How long Slack waits for an ack before retrying. Default 3000. */
  ackTimeoutMs?: number;
  /**
   * Budgets enforced per method. Default: none, except `conversations.replies` at its tier's budget
   * (`historyTier`, default `non-marketplace`: 1 call a minute) and `agents.sessions.setStatus` at Tier 3
   * (50 a minute); a budget given here replaces it.
   */
  rateLimits?: Record<string, FakeRateLimit>;
  /** The clock of stream lifetimes (tests simulate minutes with it). Default `Date.now`. */
  now?: () => number;
  /** How long a native stream lives. Default {@link FAKE_STREAM_LIMITS.lifetimeMs}. */
  streamLifetimeMs?: number;
}

/** An injected failure for the next calls of a method. */
export type FakeFailure = { status: 429; retryAfterSeconds: number } | { error: string };

/**
 * A local Slack: the Web API over HTTP (`/api/<method>`, form or JSON bodies, bearer tokens) with a
 * message store, Socket Mode over WebSocket (`apps.connections.open` returns its `ws://` URL; hello,
 * envelopes, acks, retries, `disconnect`), and signed HTTP event delivery. Tests act as users with
 * `post`, `edit`, `remove`, `react` and `click`, and read what the bot did from `store`.
 */
export class FakeSlackServer {
  readonly config: FakeSlackConfig;
  readonly store = new FakeSlackStore();
  readonly delivery: EventDelivery;
  /** HTTP 429 answers sent so far. */
  rateLimited = 0;
  /** Time for stream lifetimes. */
  readonly clock: FakeStreamClock;
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<Socket>();
  private readonly failures = new Map<string, FakeFailure[]>();
  private readonly holds = new Map<string, { arrived: () => void; released: Promise<void> }[]>();
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly rateLimits: Record<string, FakeRateLimit>;
  private eventSeq = 0;

  private constructor(options: FakeSlackOptions) {
    this.config = {
      teamId: options.teamId ?? "T0FAKE",
      botUserId: options.botUserId ?? "U0BOT",
      botId: options.botId ?? "B0BOT",
      botToken: options.botToken ?? "xoxb-test",
      appToken: options.appToken ?? "xapp-test",
      streaming: options.streaming ?? true,
      assistantStatus: options.assistantStatus ?? true,
      agentSessions: options.agentSessions ?? true,
      agentView: options.agentView ?? true,
      historyTier: options.historyTier ?? "non-marketplace",
    };
    this.clock = {
      now: options.now ?? Date.now,
      lifetimeMs: options.streamLifetimeMs ?? FAKE_STREAM_LIMITS.lifetimeMs,
    };
    this.rateLimits = {
      "conversations.replies": {
        limit: FAKE_HISTORY_TIERS[this.config.historyTier].perMinute,
        windowMs: 60_000,
      },
      // Tier 3, "50+ per minute" (https://docs.slack.dev/apis/web-api/rate-limits; the method's page names
      // no tier, Tier 3 is what https://docs.rs/crate/slack-morphism/2.29.0/source/src/api/agents.rs
      // declares for it).
      "agents.sessions.setStatus": { limit: 50, windowMs: 60_000 },
      ...options.rateLimits,
    };
    this.delivery = new EventDelivery({
      ackTimeoutMs: options.ackTimeoutMs ?? 3000,
      maxRetries: 3,
      signingSecret: options.signingSecret ?? "test-signing-secret",
    });
    this.server = createServer((req, res) => void this.onRequest(req, res));
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.server.on("upgrade", (req, socket, head) => {
      if (!req.url?.startsWith("/socket")) {
        socket.destroy();
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.delivery.connected(ws));
    });
  }

  /** Starts on 127.0.0.1 with a free port. */
  static async start(options: FakeSlackOptions = {}): Promise<FakeSlackServer> {
    const fake = new FakeSlackServer(options);
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** `http://127.0.0.1:<port>/api/` — what SLACK_API_URL points at. */
  get apiUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/`;
  }

  addUser(id: string, name: string): void {
    this.store.users.set(id, name);
  }

  /** Starts every method budget afresh (benchmarks, after a warm-up). */
  resetRateLimits(): void {
    this.windows.clear();
  }

  /** The next `times` calls of `method` fail this way. */
  failNext(method: string, failure: FakeFailure, times = 1): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...Array(times).fill(failure)]);
  }

  /**
   * The next call of `method` is answered only once the test calls `release` (a slow or rate-limited
   * Slack); `arrived` resolves when that call came in.
   */
  holdNext(method: string): { arrived: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const arrival = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.holds.set(method, [...(this.holds.get(method) ?? []), { arrived, released }]);
    return { arrived: arrival, release };
  }

  /** Calls of `method` so far. */
  callsOf(method: string) {
    return this.store.calls.filter((call) => call.method === method);
  }

  /**
   * A user writes a message: stored, then delivered as a `message` event and — when it mentions the bot
   * and `mentionEvent` is not false — also as an `app_mention` event, as Slack does.
   */
  post(input: {
    user: string;
    channel: string;
    text: string;
    threadTs?: string;
    files?: Record<string, unknown>[];
    mentionEvent?: boolean;
  }): FakeMessage {
    const message = this.store.add({
      channel: input.channel,
      ts: this.store.nextTs(),
      user: input.user,
      text: input.text,
      ...(input.threadTs !== undefined ? { threadTs: input.threadTs } : {}),
      ...(input.files ? { files: input.files } : {}),
    });
    const base = {
      user: input.user,
      text: input.text,
      ts: message.ts,
      channel: input.channel,
      event_ts: message.ts,
      team: this.config.teamId,
      ...(input.threadTs !== undefined ? { thread_ts: input.threadTs } : {}),
      ...(input.files ? { files: input.files } : {}),
    };
    const channelType = input.channel.startsWith("D") ? "im" : "channel";
    this.event({
      type: "message",
      ...base,
      channel_type: channelType,
      ...(input.files ? { subtype: "file_share" } : {}),
    });
    if (input.text.includes(`<@${this.config.botUserId}>`) && input.mentionEvent !== false) {
      this.event({ type: "app_mention", ...base });
    }
    return message;
  }

  /** The author edits a message (`message_changed`). */
  edit(message: FakeMessage, text: string): Delivery {
    const previous = {
      type: "message",
      user: message.user,
      text: message.text,
      ts: message.ts,
      ...thread(message),
    };
    message.text = text;
    message.history.push(text);
    this.store.changed();
    return this.event({
      type: "message",
      subtype: "message_changed",
      hidden: true,
      channel: message.channel,
      channel_type: "channel",
      ts: this.store.nextTs(),
      event_ts: this.store.nextTs(),
      message: { ...previous, text, edited: { user: message.user, ts: this.store.nextTs() } },
      previous_message: previous,
    });
  }

  /** The author deletes a message (`message_deleted`). */
  remove(message: FakeMessage): Delivery {
    message.deleted = true;
    this.store.changed();
    return this.event({
      type: "message",
      subtype: "message_deleted",
      hidden: true,
      channel: message.channel,
      channel_type: "channel",
      ts: this.store.nextTs(),
      event_ts: this.store.nextTs(),
      deleted_ts: message.ts,
      previous_message: {
        type: "message",
        user: message.user,
        text: message.text,
        ts: message.ts,
        ...thread(message),
      },
    });
  }

  /** A user adds (or removes) a reaction. */
  react(user: string, message: FakeMessage, name: string, added = true): Delivery {
    const users = message.reactions.get(name) ?? new Set<string>();
    if (added) users.add(user);
    else users.delete(user);
    message.reactions.set(name, users);
    this.store.changed();
    return this.event({
      type: added ? "reaction_added" : "reaction_removed",
      user,
      reaction: name,
      item: { type: "message", channel: message.channel, ts: message.ts },
      item_user: message.user,
      event_ts: this.store.nextTs(),
    });
  }

  /** A user clicks the button whose action id starts with `actionPrefix` on a Block Kit message. */
  click(user: string, message: FakeMessage, actionPrefix: string): Delivery {
    const buttons = (message.blocks ?? []).flatMap(
      (block) =>
        ((block as { elements?: Record<string, unknown>[] }).elements ?? []) as Record<string, unknown>[],
    );
    const button = buttons.find((element) => String(element.action_id ?? "").startsWith(actionPrefix));
    if (!button) throw new Error(`fake Slack: no button ${actionPrefix}… on message ${message.ts}`);
    return this.blockActions(user, message, { ...button, type: "button", action_ts: this.store.nextTs() });
  }

  /**
   * A user clicks 👍 (`positive`) or 👎 (`negative`) of the `feedback_buttons` on a message (its blocks,
   * or those `chat.stopStream` put at its bottom). Slack sends a `block_actions` payload whose action is
   * the element's `action_id`, the block's `block_id` and the clicked button's `value` and `text`
   * (https://docs.slack.dev/tools/bolt-js/reference/interfaces/FeedbackButtonsAction); every click is
   * sent, a repeated one included.
   * @throws Error when the message shows no feedback buttons (there would be nothing to click).
   */
  clickFeedback(user: string, message: FakeMessage, side: "positive" | "negative"): Delivery {
    const blocks = [...(message.blocks ?? []), ...(message.footerBlocks ?? [])] as Record<string, unknown>[];
    for (const block of blocks) {
      if (block.type !== "context_actions") continue;
      const elements = (block.elements ?? []) as Record<string, unknown>[];
      const element = elements.find((candidate) => candidate.type === "feedback_buttons");
      if (!element) continue;
      const button = element[`${side}_button`] as { text?: unknown; value?: unknown };
      return this.blockActions(user, message, {
        type: "feedback_buttons",
        action_id: element.action_id,
        block_id: block.block_id,
        value: button.value,
        text: button.text,
        action_ts: this.store.nextTs(),
      });
    }
    throw new Error(`fake Slack: no feedback buttons on message ${message.ts}`);
  }

  private blockActions(user: string, message: FakeMessage, action: Record<string, unknown>): Delivery {
    return this.delivery.deliver("interactive", {
      type: "block_actions",
      user: { id: user, username: user.toLowerCase(), name: user.toLowerCase(), team_id: this.config.teamId },
      api_app_id: "A0FAKEAPP",
      token: "verification-token",
      container: {
        type: "message",
        message_ts: message.ts,
        channel_id: message.channel,
        is_ephemeral: false,
        ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
      },
      trigger_id: issueTrigger(this.store, user),
      team: { id: this.config.teamId, domain: "fake" },
      channel: { id: message.channel, name: "general" },
      message: {
        type: "message",
        user: message.user,
        text: message.text,
        ts: message.ts,
        ...thread(message),
        blocks: [...(message.blocks ?? []), ...(message.footerBlocks ?? [])],
      },
      response_url: `${this.apiUrl}response_url`,
      actions: [action],
    });
  }

  /**
   * The user a modal was opened for presses its Submit with `values` typed into its inputs (block id →
   * action id → text): a `view_submission` interactive payload; await the delivery's `ack` and read its
   * `response` (e.g. `response_action: "errors"`). A submission acknowledged without errors closes the modal.
   */
  submitView(viewId: string, values: Record<string, Record<string, string>>): Delivery {
    const delivery = this.delivery.deliver("interactive", viewSubmission(this.store, viewId, values));
    void delivery.ack.then(() => {
      const answer = delivery.response as { response_action?: unknown } | undefined;
      if (answer?.response_action !== "errors") closeView(this.store, viewId);
    });
    return delivery;
  }

  /**
   * A user clicks Slack's native Stop button on the thread's agent session. Slack shows it only while the
   * session is `processing`, stops the app's streams in the thread itself, and sends
   * `agent_session_stopped` with their timestamps (https://docs.slack.dev/reference/events/agent_session_stopped);
   * the session's status is left for the app to change.
   * @throws Error when the thread has no processing session (there would be no button to click).
   */
  clickStop(user: string, root: FakeMessage): Delivery {
    const threadTs = root.threadTs ?? root.ts;
    const session = this.store.session(root.channel, threadTs);
    if (session?.status !== "processing") {
      throw new Error(`fake Slack: no Stop button in ${threadTs} (session ${session?.status ?? "missing"})`);
    }
    const stopped = this.store
      .botMessages(root.channel, threadTs, this.config.botUserId)
      .filter((message) => message.streaming);
    for (const message of stopped) message.streaming = false;
    this.store.changed();
    return this.event({
      type: "agent_session_stopped",
      channel: root.channel,
      thread_ts: threadTs,
      user,
      streaming_message_ts: stopped.map((message) => message.ts),
      event_ts: this.store.nextTs(),
    });
  }

  /**
   * A user opens the bot's DM. An agent app (`agentView`) gets `app_home_opened` with `tab: "messages"`
   * (https://docs.slack.dev/ai/migrating-to-agent-messaging/: it "replaces the assistant_thread_started
   * event"); a legacy assistant app gets `assistant_thread_started` for a new thread
   * (https://docs.slack.dev/reference/events/assistant_thread_started).
   */
  openDm(user: string, channel: string): Delivery {
    if (this.config.agentView) {
      return this.event({
        type: "app_home_opened",
        user,
        channel,
        tab: "messages",
        event_ts: this.store.nextTs(),
      });
    }
    return this.event({
      type: "assistant_thread_started",
      assistant_thread: {
        user_id: user,
        channel_id: channel,
        thread_ts: this.store.nextTs(),
        context: { channel_id: "C0GENERAL", team_id: this.config.teamId, enterprise_id: null },
      },
      event_ts: this.store.nextTs(),
    });
  }

  /** Delivers `event` (again) as an Events API callback; reuse `eventId` to simulate a retry. */
  event(
    event: Record<string, unknown>,
    eventId = `Ev${(++this.eventSeq).toString().padStart(8, "0")}`,
  ): Delivery {
    return this.delivery.deliver(
      "events_api",
      {
        token: "verification-token",
        team_id: this.config.teamId,
        api_app_id: "A0FAKEAPP",
        event,
        type: "event_callback",
        event_id: eventId,
        event_time: Math.floor(Date.now() / 1000),
        authorizations: [
          {
            enterprise_id: null,
            team_id: this.config.teamId,
            user_id: this.config.botUserId,
            is_bot: true,
            is_enterprise_install: false,
          },
        ],
        is_ext_shared_channel: false,
      },
      eventId,
    );
  }

  async close(): Promise<void> {
    this.delivery.close();
    for (const socket of this.wss.clients) socket.terminate();
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closing;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const method = (req.url ?? "").replace(/^\/api\//, "").split("?")[0] ?? "";
    const args = parseArgs(raw, req.headers["content-type"]);
    const token =
      /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? (args.token as string | undefined);
    const hold = this.holds.get(method)?.shift();
    if (hold) {
      hold.arrived();
      await hold.released;
    }
    const failure = this.failures.get(method)?.shift();
    if (failure && "status" in failure) return this.tooMany(res, method, args, failure.retryAfterSeconds);
    const wait = this.budgetWait(method, args);
    if (wait > 0) return this.tooMany(res, method, args, Math.ceil(wait / 1000));
    const reply: ApiReply = failure
      ? { ok: false, error: failure.error }
      : handleWebApi(method, args, token, {
          store: this.store,
          config: this.config,
          socketUrl: () =>
            `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/socket?ticket=${this.store.nextTs()}`,
          echo: (event) => void this.event(event),
          clock: this.clock,
        });
    this.store.record({ method, args, outcome: reply.ok ? "ok" : reply.error, at: Date.now() });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(reply));
  }

  private tooMany(res: ServerResponse, method: string, args: Record<string, unknown>, seconds: number): void {
    this.rateLimited++;
    this.store.record({ method, args, outcome: "ratelimited", at: Date.now() });
    res.writeHead(429, { "content-type": "application/json", "retry-after": String(seconds) });
    res.end(JSON.stringify({ ok: false, error: "ratelimited" }));
  }

  /** ms until the method's window has room again (0: the call counts and goes through). */
  private budgetWait(method: string, args: Record<string, unknown>): number {
    const budget = this.rateLimits[method];
    if (!budget) return 0;
    const key = budget.perChannel ? `${method}:${String(args.channel ?? args.channel_id ?? "")}` : method;
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || now - window.start >= budget.windowMs) {
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    if (window.count >= budget.limit) return window.start + budget.windowMs - now;
    window.count++;
    return 0;
  }
}

function thread(message: FakeMessage): { thread_ts?: string } {
  return message.threadTs ? { thread_ts: message.threadTs } : {};
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}
