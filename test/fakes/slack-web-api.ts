import { blockErrors } from "./slack-blocks.js";
import type { FakeMessage, FakeSlackStore } from "./slack-store.js";
import {
  appendStream,
  type FakeStreamClock,
  setSession,
  startStream,
  stopStream,
  streamOpen,
} from "./slack-streams.js";
import { viewsOpen } from "./slack-views.js";

/** The fake workspace's identity and switches. */
export interface FakeSlackConfig {
  teamId: string;
  botUserId: string;
  botId: string;
  botToken: string;
  appToken: string;
  /** `chat.startStream` & co. exist (else `unknown_method`). */
  streaming: boolean;
  /** `assistant.threads.setStatus` is allowed (else `not_allowed_token_type`). */
  assistantStatus: boolean;
  /** `agents.sessions.setStatus` exists (else `unknown_method`, a workspace before agent sessions). */
  agentSessions: boolean;
  /**
   * The app is an agent (`agent_view`, the Agent messaging experience) rather than a legacy assistant
   * (`assistant_view`): suggested prompts sent with a `thread_ts` are silently dropped.
   */
  agentView: boolean;
  /**
   * The app's `conversations.replies` limits: `non-marketplace` (a commercially distributed app outside the
   * Marketplace: `limit` at most 15, 1 call a minute) or `internal` (internal and Marketplace apps: Tier 3).
   */
  historyTier: "non-marketplace" | "internal";
}

/**
 * `conversations.replies` by app type: "As of May 29, 2025, for new applications and installation
 * commercially distributed outside of the Marketplace, this method is rate limited to 1 request per
 * minute. The maximum and default values for the limit parameter have both been reduced to 15 objects.
 * For Marketplace and internal customer-built applications, this method has Tier 3 rate limits."
 * (https://docs.slack.dev/reference/methods/conversations.replies; Tier 3 is "50+ per minute":
 * https://docs.slack.dev/apis/web-api/rate-limits). The server enforces the call budget (HTTP 429 with
 * Retry-After), the handler the page size.
 */
export const FAKE_HISTORY_TIERS = {
  "non-marketplace": { maxLimit: 15, defaultLimit: 15, perMinute: 1 },
  internal: { maxLimit: 1000, defaultLimit: 1000, perMinute: 50 },
} as const;

/** A Web API answer: Slack's JSON (`ok` added by the server). */
export type ApiReply = { ok: true; [field: string]: unknown } | { ok: false; error: string };

/** What the Web API needs besides the store. */
export interface WebApiContext {
  store: FakeSlackStore;
  config: FakeSlackConfig;
  /** URL for a new Socket Mode connection. */
  socketUrl(): string;
  /** Delivers an Events API event about something the bot did (Slack echoes the bot's own messages). */
  echo(event: Record<string, unknown>): void;
  /** Time for stream lifetimes (tests may simulate it). */
  clock: FakeStreamClock;
}

type Handler = (args: Record<string, unknown>, ctx: WebApiContext) => ApiReply;

const fail = (error: string): ApiReply => ({ ok: false, error });

/** Slack's answer to blocks that break a Block Kit limit (see slack-blocks.ts), or `undefined`. */
function invalidBlocks(args: Record<string, unknown>): ApiReply | undefined {
  const errors = Array.isArray(args.blocks) ? blockErrors(args.blocks) : [];
  return errors.length > 0 ? ({ ok: false, error: "invalid_blocks", errors } as ApiReply) : undefined;
}

function botMessage(ctx: WebApiContext, args: Record<string, unknown>): FakeMessage | ApiReply {
  const message = ctx.store.get(String(args.channel), String(args.ts));
  if (!message || message.deleted) return fail("message_not_found");
  if (message.user !== ctx.config.botUserId) return fail("cant_update_message");
  return message;
}

function postBotMessage(ctx: WebApiContext, args: Record<string, unknown>, text: string): FakeMessage {
  const channel = String(args.channel ?? "");
  const threadTs = args.thread_ts === undefined ? undefined : String(args.thread_ts);
  const message = ctx.store.add({
    channel,
    ts: ctx.store.nextTs(),
    ...(threadTs !== undefined ? { threadTs } : {}),
    user: ctx.config.botUserId,
    botId: ctx.config.botId,
    text,
    ...(Array.isArray(args.blocks) ? { blocks: args.blocks } : {}),
  });
  ctx.echo({
    type: "message",
    channel,
    user: ctx.config.botUserId,
    bot_id: ctx.config.botId,
    text,
    ts: message.ts,
    ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
    channel_type: channel.startsWith("D") ? "im" : "channel",
  });
  return message;
}

function wire(message: FakeMessage): Record<string, unknown> {
  return {
    type: "message",
    user: message.user,
    ...(message.botId ? { bot_id: message.botId } : {}),
    text: message.text,
    ts: message.ts,
    ...(message.threadTs ? { thread_ts: message.threadTs } : {}),
  };
}

function react(ctx: WebApiContext, args: Record<string, unknown>, add: boolean): ApiReply {
  const message = ctx.store.get(String(args.channel), String(args.timestamp));
  if (!message || message.deleted) return fail("message_not_found");
  const name = String(args.name ?? "");
  const users = message.reactions.get(name) ?? new Set<string>();
  if (add === users.has(ctx.config.botUserId)) return fail(add ? "already_reacted" : "no_reaction");
  if (add) users.add(ctx.config.botUserId);
  else users.delete(ctx.config.botUserId);
  if (users.size === 0) message.reactions.delete(name);
  else message.reactions.set(name, users);
  ctx.store.changed();
  return { ok: true };
}

const HANDLERS: Record<string, Handler> = {
  "auth.test": (_args, ctx) => ({
    ok: true,
    url: "https://fake.slack.test/",
    team: "Fake Team",
    user: "threadline",
    team_id: ctx.config.teamId,
    user_id: ctx.config.botUserId,
    bot_id: ctx.config.botId,
    is_enterprise_install: false,
  }),
  "chat.postMessage": (args, ctx) => {
    const text = String(args.text ?? "");
    if (text === "" && !args.blocks) return fail("no_text");
    const invalid = invalidBlocks(args);
    if (invalid) return invalid;
    const message = postBotMessage(ctx, args, text);
    return { ok: true, channel: message.channel, ts: message.ts, message: wire(message) };
  },
  "chat.update": (args, ctx) => {
    const message = botMessage(ctx, args);
    if ("ok" in message) return message;
    if (streamOpen(message, ctx.clock)) return fail("message_is_streaming");
    const invalid = invalidBlocks(args);
    if (invalid) return invalid;
    message.text = String(args.text ?? message.text);
    if (Array.isArray(args.blocks)) message.blocks = args.blocks;
    message.edits++;
    message.history.push(message.text);
    ctx.store.changed();
    return { ok: true, channel: message.channel, ts: message.ts, text: message.text };
  },
  "chat.delete": (args, ctx) => {
    const message = botMessage(ctx, args);
    if ("ok" in message) return message;
    message.deleted = true;
    ctx.store.changed();
    return { ok: true, channel: message.channel, ts: message.ts };
  },
  "chat.postEphemeral": (args, ctx) => {
    ctx.store.ephemerals.push({
      channel: String(args.channel),
      user: String(args.user),
      text: String(args.text ?? ""),
      ...(args.thread_ts ? { threadTs: String(args.thread_ts) } : {}),
    });
    ctx.store.changed();
    return { ok: true, message_ts: ctx.store.nextTs() };
  },
  "chat.startStream": (args, ctx) => startStream(args, ctx, (text) => postBotMessage(ctx, args, text)),
  "chat.appendStream": (args, ctx) => {
    if (!ctx.config.streaming) return fail("unknown_method");
    const message = botMessage(ctx, args);
    return "ok" in message ? message : appendStream(args, ctx, message);
  },
  "chat.stopStream": (args, ctx) => {
    if (!ctx.config.streaming) return fail("unknown_method");
    const message = botMessage(ctx, args);
    return "ok" in message ? message : stopStream(args, ctx, message);
  },
  "agents.sessions.setStatus": (args, ctx) => setSession(args, ctx),
  "reactions.add": (args, ctx) => react(ctx, args, true),
  "reactions.remove": (args, ctx) => react(ctx, args, false),
  // Cursor-paginated (https://docs.slack.dev/apis/web-api/pagination): `limit` per page, capped by the
  // app's tier (FAKE_HISTORY_TIERS), `response_metadata.next_cursor` while more remain.
  "conversations.replies": (args, ctx) => {
    const message = ctx.store.get(String(args.channel), String(args.ts));
    if (!message) return fail("thread_not_found");
    const root = message.threadTs ?? message.ts;
    const tier = FAKE_HISTORY_TIERS[ctx.config.historyTier];
    const asked = args.limit === undefined ? tier.defaultLimit : Number(args.limit);
    const limit = Math.max(1, Math.min(Number.isFinite(asked) ? asked : tier.defaultLimit, tier.maxLimit));
    let offset = 0;
    if (args.cursor !== undefined && args.cursor !== "") {
      const decoded = /^offset:(\d+)$/.exec(Buffer.from(String(args.cursor), "base64").toString("utf8"));
      if (!decoded) return fail("invalid_cursor");
      offset = Number(decoded[1]);
    }
    const all = ctx.store.thread(message.channel, root);
    const page = all.slice(offset, offset + limit);
    ctx.store.historyPages.push({ channel: message.channel, threadTs: root, limit, returned: page.length });
    const more = offset + limit < all.length;
    return {
      ok: true,
      messages: page.map(wire),
      has_more: more,
      ...(more
        ? { response_metadata: { next_cursor: Buffer.from(`offset:${offset + limit}`).toString("base64") } }
        : {}),
    };
  },
  "assistant.threads.setStatus": (args, ctx) => {
    if (!ctx.config.assistantStatus) return fail("not_allowed_token_type");
    ctx.store.statuses.push({
      channel: String(args.channel_id),
      threadTs: String(args.thread_ts),
      status: String(args.status ?? ""),
      at: Date.now(),
    });
    ctx.store.changed();
    return { ok: true };
  },
  // https://docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts: `channel_id` and
  // `prompts` (each with its `title` and `message`) required, "up to four suggested prompts"; "The
  // thread_ts parameter should only be used in the legacy assistant messaging experience. Including it in
  // a call for an agent app will cause the call to silently fail."
  "assistant.threads.setSuggestedPrompts": (args, ctx) => {
    const channel = String(args.channel_id ?? "");
    if (channel === "") return fail("channel_not_found");
    const prompts = args.prompts;
    const valid =
      Array.isArray(prompts) &&
      prompts.length >= 1 &&
      prompts.length <= 4 &&
      prompts.every(
        (prompt: { title?: unknown; message?: unknown }) =>
          typeof prompt?.title === "string" &&
          prompt.title !== "" &&
          typeof prompt.message === "string" &&
          prompt.message !== "",
      );
    if (!valid) return fail("invalid_arguments");
    const threadTs = args.thread_ts === undefined ? undefined : String(args.thread_ts);
    if (threadTs !== undefined && ctx.config.agentView) return { ok: true };
    if (threadTs === undefined && !ctx.config.agentView) return fail("invalid_thread_ts");
    ctx.store.suggestedPrompts.push({
      channel,
      ...(threadTs !== undefined ? { threadTs } : {}),
      ...(args.title !== undefined ? { title: String(args.title) } : {}),
      prompts: (prompts as { title: string; message: string }[]).map(({ title, message }) => ({
        title,
        message,
      })),
    });
    ctx.store.changed();
    return { ok: true };
  },
  "views.open": viewsOpen,
  "users.info": (args, ctx) => {
    const id = String(args.user ?? "");
    const name = ctx.store.users.get(id);
    if (name === undefined) return fail("user_not_found");
    return {
      ok: true,
      user: {
        id,
        name: name.toLowerCase(),
        real_name: name,
        profile: { display_name: name, real_name: name },
      },
    };
  },
};

/**
 * Answers one Web API call like Slack: `apps.connections.open` needs the app token, everything else the
 * bot token; unknown methods answer `unknown_method`.
 */
export function handleWebApi(
  method: string,
  args: Record<string, unknown>,
  token: string | undefined,
  ctx: WebApiContext,
): ApiReply {
  if (method === "apps.connections.open") {
    return token === ctx.config.appToken ? { ok: true, url: ctx.socketUrl() } : fail("invalid_auth");
  }
  if (token !== ctx.config.botToken) return fail(token ? "invalid_auth" : "not_authed");
  const handler = HANDLERS[method];
  return handler ? handler(args, ctx) : fail("unknown_method");
}

const JSON_FIELDS = new Set(["blocks", "attachments", "chunks", "metadata", "unfurls", "prompts"]);

/** Form (WebClient's default) or JSON bodies; JSON-valued form fields (blocks, chunks…) parsed. */
export function parseArgs(raw: string, contentType: string | undefined): Record<string, unknown> {
  if (raw === "") return {};
  if (contentType?.includes("application/json")) return JSON.parse(raw) as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    args[name] = JSON_FIELDS.has(name) ? safeJson(value) : value;
  }
  return args;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
