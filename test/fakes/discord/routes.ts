import { componentErrors } from "./components.js";
import type { FakeGateway } from "./gateway.js";
import { type FakeInteraction, modalErrors } from "./interactions.js";
import { discordError, type FakeRest, type RestReply } from "./rest.js";
import { CHANNEL, type DiscordState, type FakeMessage, MESSAGE_TYPE, normalizeEmoji } from "./state.js";

/** What the REST routes need from the server. */
export interface RouteContext {
  state: DiscordState;
  gateway: FakeGateway;
  interactions: Map<string, FakeInteraction>;
  /** How long Discord accepts an interaction's first callback (3 s). */
  interactionDeadlineMs: number;
  gatewayUrl: () => string;
  /** Typing indicators the bot sent, per channel id. */
  typing: Map<string, number>;
  /** Dispatches a message event to the shard of its guild (or DMs). */
  dispatchMessage: (event: string, message: FakeMessage, data?: Record<string, unknown>) => void;
}

const MAX_CONTENT = 2000;

/** Registers Discord's REST routes the bot uses on `rest`. */
export function registerRoutes(rest: FakeRest, ctx: RouteContext): void {
  const { state } = ctx;
  const ok = (body?: unknown): RestReply => (body === undefined ? { status: 204 } : { status: 200, body });
  const channelOrError = (id: string) => state.channel(id);
  const messageIn = (channelId: string, messageId: string) => {
    const message = state.messages.get(messageId);
    return message && message.channelId === channelId && !message.deleted ? message : undefined;
  };

  rest.route("GET", "/gateway/bot", () =>
    ok({
      url: ctx.gatewayUrl(),
      shards: 1,
      session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 16 },
    }),
  );
  rest.route("GET", "/users/@me", () => ok(state.apiUser(state.bot.id)));
  rest.route("POST", "/users/@me/channels", (_p, body) => {
    const recipient = String(body.recipient_id ?? "");
    if (!state.users.has(recipient)) return discordError(400, 50033, "Invalid Recipient(s)");
    let dm = [...state.channels.values()].find((c) => c.type === CHANNEL.dm && c.recipientId === recipient);
    if (!dm) {
      dm = { id: state.ids.next(), type: CHANNEL.dm, name: "", recipientId: recipient };
      state.channels.set(dm.id, dm);
    }
    return ok(state.apiChannel(dm.id));
  });
  rest.route("GET", "/channels/:c", ([c]) =>
    channelOrError(c!) ? ok(state.apiChannel(c!)) : discordError(404, 10003, "Unknown Channel"),
  );
  rest.route("GET", "/channels/:c/messages", ([c], _b, query) => {
    if (!channelOrError(c!)) return discordError(404, 10003, "Unknown Channel");
    const before = query.get("before");
    const limit = Math.min(100, Number(query.get("limit") ?? 50));
    const list = state
      .channelMessages(c!)
      .filter((m) => !m.deleted && (before === null || BigInt(m.id) < BigInt(before)))
      .reverse()
      .slice(0, limit);
    return ok(list.map((m) => state.apiMessage(m.id)));
  });
  rest.route("GET", "/channels/:c/messages/:m", ([c, m]) => {
    const message = messageIn(c!, m!);
    return message ? ok(state.apiMessage(message.id)) : discordError(404, 10008, "Unknown Message");
  });
  rest.route("POST", "/channels/:c/messages", ([c], body) => {
    const channel = channelOrError(c!);
    if (!channel) return discordError(404, 10003, "Unknown Channel");
    const invalid = invalidBody(body);
    if (invalid) return invalid;
    const message = state.addMessage({
      channelId: channel.id,
      ...(channel.guildId ? { guildId: channel.guildId } : {}),
      authorId: state.bot.id,
      content: String(body.content ?? ""),
      embeds: (body.embeds as unknown[] | undefined) ?? [],
      components: (body.components as unknown[] | undefined) ?? [],
      type: body.message_reference ? MESSAGE_TYPE.reply : MESSAGE_TYPE.default,
      flags: 0,
      pinged: pingedUsers(String(body.content ?? ""), body.allowed_mentions),
    });
    ctx.dispatchMessage("MESSAGE_CREATE", message);
    return ok(state.apiMessage(message.id));
  });
  rest.route("PATCH", "/channels/:c/messages/:m", ([c, m], body) => {
    const message = messageIn(c!, m!);
    if (!message) return discordError(404, 10008, "Unknown Message");
    if (message.authorId !== state.bot.id)
      return discordError(403, 50005, "Cannot edit a message authored by another user");
    const invalid = invalidBody({ content: message.content, embeds: message.embeds, ...body });
    if (invalid) return invalid;
    if ("content" in body) message.content = String(body.content ?? "");
    if ("embeds" in body) message.embeds = (body.embeds as unknown[]) ?? [];
    if ("components" in body) message.components = (body.components as unknown[]) ?? [];
    message.history.push(message.content);
    message.editedAt = Date.now();
    ctx.dispatchMessage("MESSAGE_UPDATE", message);
    return ok(state.apiMessage(message.id));
  });
  rest.route("DELETE", "/channels/:c/messages/:m", ([c, m]) => {
    const message = messageIn(c!, m!);
    if (!message) return discordError(404, 10008, "Unknown Message");
    if (message.authorId !== state.bot.id) return discordError(403, 50013, "Missing Permissions");
    message.deleted = true;
    ctx.dispatchMessage("MESSAGE_DELETE", message, { id: message.id, channel_id: message.channelId });
    return ok();
  });
  for (const method of ["PUT", "DELETE"]) {
    rest.route(method, "/channels/:c/messages/:m/reactions/:e/@me", ([c, m, e]) => {
      const message = messageIn(c!, m!);
      if (!message) return discordError(404, 10008, "Unknown Message");
      const emoji = normalizeEmoji(e!);
      if (emoji === "" || /^[\w-]+$/.test(emoji)) return discordError(400, 10014, "Unknown Emoji");
      const users = message.reactions.get(emoji) ?? new Set<string>();
      message.reactions.set(emoji, users);
      const had = users.has(state.bot.id);
      if (method === "PUT") users.add(state.bot.id);
      else users.delete(state.bot.id);
      if (had !== (method === "PUT")) {
        const event = method === "PUT" ? "MESSAGE_REACTION_ADD" : "MESSAGE_REACTION_REMOVE";
        ctx.dispatchMessage(event, message, reactionEvent(state, message, state.bot.id, emoji));
      }
      return ok();
    });
  }
  rest.route("POST", "/channels/:c/messages/:m/threads", ([c, m], body) => {
    const parent = channelOrError(c!);
    const message = messageIn(c!, m!);
    if (!parent || parent.type !== CHANNEL.text || !message)
      return discordError(404, 10008, "Unknown Message");
    if (state.channel(message.id))
      return discordError(400, 160004, "A thread has already been created for this message");
    const name = String(body.name ?? "");
    if (name === "" || name.length > 100) return discordError(400, 50035, "Invalid Form Body");
    const thread = {
      id: message.id,
      type: CHANNEL.publicThread,
      guildId: parent.guildId!,
      name,
      parentId: parent.id,
      ownerId: state.bot.id,
    };
    state.channels.set(thread.id, thread);
    ctx.gateway.dispatch(
      "THREAD_CREATE",
      { ...state.apiChannel(thread.id), newly_created: true },
      { guildId: thread.guildId },
    );
    return { status: 201, body: state.apiChannel(thread.id) };
  });
  rest.route("POST", "/channels/:c/typing", ([c]) => {
    if (!channelOrError(c!)) return discordError(404, 10003, "Unknown Channel");
    ctx.typing.set(c!, (ctx.typing.get(c!) ?? 0) + 1);
    return ok();
  });
  rest.route("POST", "/interactions/:id/:token/callback", ([id, token], body) => {
    const interaction = ctx.interactions.get(id!);
    if (!interaction || interaction.token !== token) return discordError(404, 10062, "Unknown interaction");
    const now = Date.now();
    if (interaction.callback) {
      interaction.rejectedCallbacks.push({ code: 40060, at: now });
      return discordError(400, 40060, "Interaction has already been acknowledged.");
    }
    if (now - interaction.createdAt > ctx.interactionDeadlineMs) {
      interaction.rejectedCallbacks.push({ code: 10062, at: now });
      return discordError(404, 10062, "Unknown interaction");
    }
    const type = Number(body.type);
    const data = body.data as Record<string, unknown> | undefined;
    if (type === 9) {
      const errors = modalErrors(data, interaction.submission !== undefined);
      if (errors.length > 0) return discordError(400, 50035, `Invalid Form Body: ${errors.join("; ")}`);
    }
    interaction.callback = { type, at: now };
    if (data) interaction.callbackData = data;
    return ok();
  });
  rest.route("POST", "/webhooks/:app/:token", ([app, token], body) => {
    const interaction = [...ctx.interactions.values()].find((entry) => entry.token === token);
    if (app !== state.applicationId || !interaction?.callback)
      return discordError(404, 10015, "Unknown Webhook");
    const content = String(body.content ?? "");
    const flags = Number(body.flags ?? 0);
    interaction.followUps.push({ content, flags, at: Date.now() });
    const card = state.messages.get(interaction.messageId);
    return ok({
      id: state.ids.next(),
      channel_id: card?.channelId,
      author: state.apiUser(state.bot.id),
      content,
      flags,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      components: [],
      pinned: false,
      type: 0,
      webhook_id: state.applicationId,
    });
  });
}

/** The MESSAGE_REACTION_ADD/REMOVE payload for `userId` reacting with `emoji` on `message`. */
export function reactionEvent(state: DiscordState, message: FakeMessage, userId: string, emoji: string) {
  return {
    user_id: userId,
    channel_id: message.channelId,
    message_id: message.id,
    message_author_id: message.authorId,
    emoji: { id: null, name: emoji },
    burst: false,
    burst_colors: [],
    type: 0,
    ...(message.guildId
      ? { guild_id: message.guildId, member: state.apiMember(message.guildId, userId, true) }
      : {}),
  };
}

function invalidBody(body: Record<string, unknown>): RestReply | undefined {
  const content = String(body.content ?? "");
  const embeds = (body.embeds as unknown[] | undefined) ?? [];
  if (content.length > MAX_CONTENT) {
    return discordError(400, 50035, "Invalid Form Body", {
      content: {
        _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: `Must be ${MAX_CONTENT} or fewer in length.` }],
      },
    });
  }
  const components = componentErrors(body.components);
  if (components) return discordError(400, 50035, "Invalid Form Body", components);
  if (content.trim() === "" && embeds.length === 0)
    return discordError(400, 50006, "Cannot send an empty message");
  return undefined;
}

/**
 * Who a message's user mentions notify. Without `allowed_mentions` every `<@id>` in the content pings; with
 * it, only the ones it allows: `parse: ["users"]` all of them, `users: [...]` those listed (and present in
 * the content) — "This will always validate against the message content to avoid phantom pings"
 * (https://discord.com/developers/docs/resources/message#allowed-mentions-object).
 */
function pingedUsers(content: string, allowed: unknown): string[] {
  const mentioned = [...content.matchAll(/<@!?(\d+)>/g)].map((match) => match[1]!);
  if (allowed === undefined || allowed === null) return mentioned;
  const { parse, users } = allowed as { parse?: string[]; users?: string[] };
  if (parse?.includes("users")) return mentioned;
  return mentioned.filter((id) => users?.includes(id));
}
