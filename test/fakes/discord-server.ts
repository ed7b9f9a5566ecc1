import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { FakeGateway } from "./discord/gateway.js";
import { type FakeInteraction, interactionCreate } from "./discord/interactions.js";
import { FakeRateLimits } from "./discord/rate-limits.js";
import { FakeRest, type RecordedRequest } from "./discord/rest.js";
import { reactionEvent, registerRoutes } from "./discord/routes.js";
import {
  CHANNEL,
  DiscordState,
  type FakeMessage,
  type FakeUser,
  MESSAGE_TYPE,
  normalizeEmoji,
} from "./discord/state.js";

export type { FakeInteraction } from "./discord/interactions.js";
export type { RecordedRequest } from "./discord/rest.js";
export type { FakeMessage, FakeUser } from "./discord/state.js";

/** Options of {@link FakeDiscordServer.start}. */
export interface FakeDiscordOptions {
  /** The bot token the fake accepts. Default `"fake-discord-token"`. */
  token?: string;
  /** Gateway heartbeat interval sent in HELLO; default 41,250 ms (Discord's). */
  heartbeatIntervalMs?: number;
  /** The bot's global REST limit per second; default 50. */
  globalLimit?: number;
  /** How long an interaction accepts its first callback; default 3,000 ms. */
  interactionDeadlineMs?: number;
}

type Waiter = { predicate: () => boolean; resolve: () => void };

/**
 * A local Discord: REST v10 and the gateway WebSocket on one 127.0.0.1 port, driven by the real
 * discord.js. Tests set up guilds, channels and users, act as people (messages, edits, deletions,
 * reactions, button clicks) and observe what the bot did through the state (messages with their edit
 * history, reactions, threads, typing, interaction answers) and the request log. {@link waitFor} resolves
 * as soon as a predicate holds, checked after every request and gateway message (no polling).
 */
export class FakeDiscordServer {
  readonly state = new DiscordState();
  readonly interactions = new Map<string, FakeInteraction>();
  readonly typing = new Map<string, number>();
  readonly limits: FakeRateLimits;
  readonly gateway: FakeGateway;
  private readonly rest: FakeRest;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private waiters: Waiter[] = [];

  private constructor(
    readonly token: string,
    options: FakeDiscordOptions,
  ) {
    this.limits = new FakeRateLimits(options.globalLimit ?? 50);
    const changed = () => this.changed();
    this.rest = new FakeRest(token, this.limits, changed);
    this.gateway = new FakeGateway(
      this.state,
      token,
      options.heartbeatIntervalMs ?? 41_250,
      () => this.gatewayUrl,
      changed,
    );
    registerRoutes(this.rest, {
      state: this.state,
      gateway: this.gateway,
      interactions: this.interactions,
      interactionDeadlineMs: options.interactionDeadlineMs ?? 3000,
      gatewayUrl: () => this.gatewayUrl,
      typing: this.typing,
      dispatchMessage: (event, message, data) => this.dispatchMessage(event, message, data),
    });
    this.server = createServer((req, res) => void this.rest.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    this.gateway.attach(this.server);
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscordServer> {
    const fake = new FakeDiscordServer(options.token ?? "fake-discord-token", options);
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** The REST base URL for `DISCORD_API_URL` (`http://127.0.0.1:<port>/api`). */
  get apiUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/gateway`;
  }

  get bot(): FakeUser {
    return this.state.bot;
  }

  get requests(): readonly RecordedRequest[] {
    return this.rest.requests;
  }

  // ── setup ────────────────────────────────────────────────────────────────────────────────────────

  /** A guild with the bot as member (and its managed role); `shard` picks which shard owns it. */
  addGuild(name: string, shard?: { id: number; count: number }): string {
    const id = shard ? this.state.ids.nextForShard(shard.id, shard.count) : this.state.ids.next();
    const botRole = { id: this.state.ids.next(), name: "Threadline", botId: this.bot.id };
    this.state.guilds.set(id, {
      id,
      name,
      roles: [{ id, name: "@everyone" }, botRole],
      members: new Map([[this.bot.id, { roles: [botRole.id], nick: null }]]),
    });
    return id;
  }

  addRole(guildId: string, name: string): string {
    const id = this.state.ids.next();
    this.guild(guildId).roles.push({ id, name });
    return id;
  }

  addUser(name: string, guilds: { guildId: string; roles?: string[]; nick?: string }[] = []): FakeUser {
    const user = this.state.addUser(name);
    for (const entry of guilds)
      this.guild(entry.guildId).members.set(user.id, { roles: entry.roles ?? [], nick: entry.nick ?? null });
    return user;
  }

  /** A text (or forum) channel; announced to connected gateways. */
  addChannel(guildId: string, name: string, type: "text" | "forum" = "text"): string {
    const id = this.state.ids.next();
    this.state.channels.set(id, { id, type: type === "forum" ? CHANNEL.forum : CHANNEL.text, guildId, name });
    this.gateway.dispatch("CHANNEL_CREATE", this.state.apiChannel(id), { guildId });
    return id;
  }

  // ── people's actions ─────────────────────────────────────────────────────────────────────────────

  /** `author` posts `content` in a channel, thread or DM (`mention` prefixes the bot's mention). */
  say(
    channelId: string,
    author: FakeUser,
    content: string,
    options: { mention?: boolean } = {},
  ): FakeMessage {
    const channel = this.channel(channelId);
    const message = this.state.addMessage({
      channelId,
      ...(channel.guildId ? { guildId: channel.guildId } : {}),
      authorId: author.id,
      content: options.mention ? `<@${this.bot.id}> ${content}` : content,
      embeds: [],
      components: [],
      type: MESSAGE_TYPE.default,
      flags: 0,
    });
    this.dispatchMessage("MESSAGE_CREATE", message);
    return message;
  }

  /** `author` opens (or reuses) their DM with the bot and writes `content` there. */
  dm(author: FakeUser, content: string): FakeMessage {
    let dm = [...this.state.channels.values()].find(
      (c) => c.type === CHANNEL.dm && c.recipientId === author.id,
    );
    if (!dm) {
      dm = { id: this.state.ids.next(), type: CHANNEL.dm, name: "", recipientId: author.id };
      this.state.channels.set(dm.id, dm);
    }
    return this.say(dm.id, author, content);
  }

  /** `author` starts a thread on their message (as the Discord client does) and returns its id. */
  startThread(messageId: string, author: FakeUser, name: string): string {
    const starter = this.message(messageId);
    const parent = this.channel(starter.channelId);
    const thread = {
      id: starter.id,
      type: CHANNEL.publicThread,
      guildId: parent.guildId!,
      name,
      parentId: parent.id,
      ownerId: author.id,
    };
    this.state.channels.set(thread.id, thread);
    this.gateway.dispatch(
      "THREAD_CREATE",
      { ...this.state.apiChannel(thread.id), newly_created: true },
      { guildId: thread.guildId },
    );
    const system = this.state.addMessage({
      channelId: thread.id,
      guildId: thread.guildId,
      authorId: author.id,
      content: "",
      embeds: [],
      components: [],
      type: MESSAGE_TYPE.threadStarter,
      flags: 0,
      referencedId: starter.id,
    });
    this.dispatchMessage("MESSAGE_CREATE", system);
    return thread.id;
  }

  /** `author` creates a forum post: a thread whose starter message (same id) is inside it. */
  forumPost(
    forumId: string,
    author: FakeUser,
    title: string,
    content: string,
    options: { mention?: boolean } = {},
  ) {
    const forum = this.channel(forumId);
    const id = this.state.ids.next();
    this.state.channels.set(id, {
      id,
      type: CHANNEL.publicThread,
      guildId: forum.guildId!,
      name: title,
      parentId: forumId,
      ownerId: author.id,
    });
    this.gateway.dispatch(
      "THREAD_CREATE",
      { ...this.state.apiChannel(id), newly_created: true },
      { guildId: forum.guildId! },
    );
    const message = this.state.addMessage({
      id,
      channelId: id,
      guildId: forum.guildId!,
      authorId: author.id,
      content: options.mention ? `<@${this.bot.id}> ${content}` : content,
      embeds: [],
      components: [],
      type: MESSAGE_TYPE.default,
      flags: 0,
    });
    this.dispatchMessage("MESSAGE_CREATE", message);
    return message;
  }

  edit(messageId: string, content: string): void {
    const message = this.message(messageId);
    message.content = content;
    message.history.push(content);
    message.editedAt = Date.now();
    this.dispatchMessage("MESSAGE_UPDATE", message);
  }

  delete(messageId: string): void {
    const message = this.message(messageId);
    message.deleted = true;
    this.dispatchMessage("MESSAGE_DELETE", message, { id: message.id, channel_id: message.channelId });
  }

  /** `user` adds (or with `added: false` removes) a reaction. `emoji` is Unicode. */
  react(user: FakeUser, messageId: string, emoji: string, added = true): void {
    const message = this.message(messageId);
    const key = normalizeEmoji(emoji);
    const users = message.reactions.get(key) ?? new Set<string>();
    message.reactions.set(key, users);
    if (added) users.add(user.id);
    else users.delete(user.id);
    const event = added ? "MESSAGE_REACTION_ADD" : "MESSAGE_REACTION_REMOVE";
    this.dispatchMessage(event, message, reactionEvent(this.state, message, user.id, emoji));
  }

  /** `user` clicks the button `customId` of message `messageId`; returns the interaction record. */
  click(user: FakeUser, messageId: string, customId: string): FakeInteraction {
    const message = this.message(messageId);
    const channel = this.channel(message.channelId);
    const interaction: FakeInteraction = {
      id: this.state.ids.next(),
      token: randomBytes(24).toString("hex"),
      userId: user.id,
      messageId,
      customId,
      createdAt: Date.now(),
      rejectedCallbacks: [],
      followUps: [],
    };
    this.interactions.set(interaction.id, interaction);
    const data = interactionCreate(this.state, interaction, channel);
    this.gateway.dispatch(
      "INTERACTION_CREATE",
      data,
      channel.guildId ? { guildId: channel.guildId } : { dm: true },
    );
    this.changed();
    return interaction;
  }

  /**
   * `user` submits the modal that the bot opened in answer to interaction `opened` (callback type 9),
   * with `values` typed into its text inputs (by custom id): a MODAL_SUBMIT interaction (type 5) through
   * the gateway, carrying the message whose button opened the modal.
   * @throws Error when `opened` was not answered with a modal (there would be nothing to submit).
   */
  submitModal(user: FakeUser, opened: FakeInteraction, values: Record<string, string>): FakeInteraction {
    if (opened.callback?.type !== 9 || !opened.callbackData) {
      throw new Error(`fake Discord: interaction ${opened.id} opened no modal`);
    }
    const message = this.message(opened.messageId);
    const channel = this.channel(message.channelId);
    const interaction: FakeInteraction = {
      id: this.state.ids.next(),
      token: randomBytes(24).toString("hex"),
      userId: user.id,
      messageId: opened.messageId,
      customId: String(opened.callbackData.custom_id),
      createdAt: Date.now(),
      rejectedCallbacks: [],
      followUps: [],
      submission: { customId: String(opened.callbackData.custom_id), values },
    };
    this.interactions.set(interaction.id, interaction);
    this.gateway.dispatch(
      "INTERACTION_CREATE",
      interactionCreate(this.state, interaction, channel),
      channel.guildId ? { guildId: channel.guildId } : { dm: true },
    );
    this.changed();
    return interaction;
  }

  // ── observation ──────────────────────────────────────────────────────────────────────────────────

  message(id: string): FakeMessage {
    const message = this.state.messages.get(id);
    if (!message) throw new Error(`fake discord: unknown message ${id}`);
    return message;
  }

  /** Visible messages of a channel or thread, in order. */
  messages(channelId: string): FakeMessage[] {
    return this.state.channelMessages(channelId).filter((message) => !message.deleted);
  }

  /** Visible messages the bot posted in a channel or thread, in order. */
  botMessages(channelId: string): FakeMessage[] {
    return this.messages(channelId).filter((message) => message.authorId === this.bot.id);
  }

  /** True when `userId` (default the bot) has reacted with `emoji` on the message. */
  hasReaction(messageId: string, emoji: string, userId = this.bot.id): boolean {
    return this.state.messages.get(messageId)?.reactions.get(normalizeEmoji(emoji))?.has(userId) ?? false;
  }

  /** The bot's reactions on a message (Unicode, variation selectors removed). */
  botReactions(messageId: string): string[] {
    const message = this.state.messages.get(messageId);
    if (!message) return [];
    return [...message.reactions.entries()]
      .filter(([, users]) => users.has(this.bot.id))
      .map(([emoji]) => emoji);
  }

  /** Whether a thread (channel) exists. */
  hasChannel(id: string): boolean {
    return this.state.channels.has(id);
  }

  /** The next `method` request to a path matching `path` waits until `release` (see {@link FakeRest.holdNext}). */
  holdNext(method: string, path: RegExp): { arrived: Promise<void>; release: () => void } {
    return this.rest.holdNext(method, path);
  }

  /** Requests matching a method and path pattern. */
  requestsTo(method: string, path: RegExp): RecordedRequest[] {
    return this.rest.requests.filter((r) => r.method === method && path.test(r.path));
  }

  /** Resolves once `predicate()` holds; re-checked after every request and gateway event. */
  waitFor(predicate: () => boolean): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ predicate, resolve }));
  }

  async close(): Promise<void> {
    this.gateway.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private guild(id: string) {
    const guild = this.state.guilds.get(id);
    if (!guild) throw new Error(`fake discord: unknown guild ${id}`);
    return guild;
  }

  private channel(id: string) {
    const channel = this.state.channel(id);
    if (!channel) throw new Error(`fake discord: unknown channel ${id}`);
    return channel;
  }

  private dispatchMessage(event: string, message: FakeMessage, data?: Record<string, unknown>): void {
    const channel = this.state.channel(message.channelId);
    let payload = data;
    if (!payload) {
      payload = this.state.apiMessage(message.id);
      if (message.guildId) payload.member = this.state.apiMember(message.guildId, message.authorId, false);
      else payload.channel_type = CHANNEL.dm;
    } else if (message.guildId) {
      payload.guild_id = message.guildId;
    }
    this.gateway.dispatch(event, payload, channel?.guildId ? { guildId: channel.guildId } : { dm: true });
    this.changed();
  }

  private changed(): void {
    if (this.waiters.length === 0) return;
    const pending: Waiter[] = [];
    for (const waiter of this.waiters) {
      if (waiter.predicate()) waiter.resolve();
      else pending.push(waiter);
    }
    this.waiters = pending;
  }
}
