import { SnowflakeGenerator, snowflakeTime } from "./snowflake.js";

/** Discord channel types the fake knows. */
export const CHANNEL = { text: 0, dm: 1, publicThread: 11, forum: 15 } as const;

/** Discord message types the fake produces. */
export const MESSAGE_TYPE = { default: 0, reply: 19, threadStarter: 21 } as const;

export interface FakeUser {
  id: string;
  username: string;
  globalName: string | null;
  bot: boolean;
}

export interface FakeRole {
  id: string;
  name: string;
  /** Set for the role Discord manages for a bot. */
  botId?: string;
}

export interface FakeGuild {
  id: string;
  name: string;
  roles: FakeRole[];
  /** userId → role ids and nickname. */
  members: Map<string, { roles: string[]; nick: string | null }>;
}

export interface FakeChannel {
  id: string;
  type: number;
  guildId?: string;
  name: string;
  parentId?: string;
  ownerId?: string;
  /** DM channels: the user the bot talks to. */
  recipientId?: string;
}

export interface FakeMessage {
  id: string;
  channelId: string;
  guildId?: string;
  authorId: string;
  content: string;
  embeds: unknown[];
  components: unknown[];
  type: number;
  flags: number;
  /** Every content the message had, oldest first (edits append). */
  history: string[];
  editedAt: number | null;
  deleted: boolean;
  /** emoji (as given, without variation selector) → user ids */
  reactions: Map<string, Set<string>>;
  /** For thread starter system messages: the message the thread was started on. */
  referencedId?: string;
  /** Users a bot message notified: its `<@id>` mentions that its `allowed_mentions` let through. */
  pinged?: string[];
}

/** Emoji compared without the U+FE0F variation selector (Discord treats both forms alike). */
export function normalizeEmoji(emoji: string): string {
  return emoji.replaceAll("\uFE0F", "");
}

/** Guilds, channels, users and messages of the fake, with the API shapes Discord sends for them. */
export class DiscordState {
  readonly ids = new SnowflakeGenerator();
  readonly users = new Map<string, FakeUser>();
  readonly guilds = new Map<string, FakeGuild>();
  readonly channels = new Map<string, FakeChannel>();
  readonly messages = new Map<string, FakeMessage>();
  readonly bot: FakeUser;
  readonly applicationId: string;

  constructor() {
    this.bot = this.addUser("Threadline", true);
    this.applicationId = this.bot.id;
  }

  addUser(name: string, bot = false): FakeUser {
    const user: FakeUser = { id: this.ids.next(), username: name.toLowerCase(), globalName: name, bot };
    this.users.set(user.id, user);
    return user;
  }

  user(id: string): FakeUser {
    const user = this.users.get(id);
    if (!user) throw new Error(`fake discord: unknown user ${id}`);
    return user;
  }

  channel(id: string): FakeChannel | undefined {
    return this.channels.get(id);
  }

  private readonly byChannel = new Map<string, FakeMessage[]>();

  /** Messages of a channel in posting order (deleted ones included). */
  channelMessages(channelId: string): FakeMessage[] {
    return this.byChannel.get(channelId) ?? [];
  }

  addMessage(
    fields: Omit<FakeMessage, "history" | "editedAt" | "deleted" | "reactions" | "id"> & { id?: string },
  ) {
    const message: FakeMessage = {
      ...fields,
      id: fields.id ?? this.ids.next(),
      history: [fields.content],
      editedAt: null,
      deleted: false,
      reactions: new Map(),
    };
    this.messages.set(message.id, message);
    const list = this.byChannel.get(message.channelId) ?? [];
    list.push(message);
    this.byChannel.set(message.channelId, list);
    return message;
  }

  apiUser(id: string): Record<string, unknown> {
    const user = this.user(id);
    return {
      id: user.id,
      username: user.username,
      discriminator: "0",
      global_name: user.globalName,
      avatar: null,
      ...(user.bot ? { bot: true } : {}),
    };
  }

  apiMember(guildId: string, userId: string, withUser: boolean): Record<string, unknown> {
    const member = this.guilds.get(guildId)?.members.get(userId) ?? { roles: [], nick: null };
    return {
      ...(withUser ? { user: this.apiUser(userId) } : {}),
      nick: member.nick,
      roles: member.roles,
      joined_at: new Date(0).toISOString(),
      deaf: false,
      mute: false,
      flags: 0,
      avatar: null,
    };
  }

  apiChannel(id: string): Record<string, unknown> {
    const channel = this.channels.get(id);
    if (!channel) throw new Error(`fake discord: unknown channel ${id}`);
    if (channel.type === CHANNEL.dm) {
      return {
        id,
        type: CHANNEL.dm,
        recipients: [this.apiUser(channel.recipientId ?? "")],
        last_message_id: null,
      };
    }
    const base = { id, type: channel.type, guild_id: channel.guildId, name: channel.name, flags: 0 };
    if (channel.type === CHANNEL.publicThread) {
      return {
        ...base,
        parent_id: channel.parentId,
        owner_id: channel.ownerId,
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        total_message_sent: 0,
        thread_metadata: {
          archived: false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date(snowflakeTime(id)).toISOString(),
          locked: false,
        },
      };
    }
    return {
      ...base,
      position: 0,
      permission_overwrites: [],
      parent_id: null,
      nsfw: false,
      topic: null,
      last_message_id: null,
      rate_limit_per_user: 0,
      ...(channel.type === CHANNEL.forum ? { available_tags: [], default_reaction_emoji: null } : {}),
    };
  }

  apiMessage(id: string): Record<string, unknown> {
    const message = this.messages.get(id);
    if (!message) throw new Error(`fake discord: unknown message ${id}`);
    const mentions = [...message.content.matchAll(/<@!?(\d+)>/g)]
      .map((match) => match[1]!)
      .filter((userId) => this.users.has(userId))
      .map((userId) => this.apiUser(userId));
    const mentionRoles = [...message.content.matchAll(/<@&(\d+)>/g)].map((match) => match[1]!);
    const api: Record<string, unknown> = {
      id: message.id,
      channel_id: message.channelId,
      author: this.apiUser(message.authorId),
      content: message.content,
      timestamp: new Date(snowflakeTime(message.id)).toISOString(),
      edited_timestamp: message.editedAt === null ? null : new Date(message.editedAt).toISOString(),
      tts: false,
      mention_everyone: false,
      mentions,
      mention_roles: mentionRoles,
      attachments: [],
      embeds: message.embeds,
      components: message.components,
      pinned: false,
      type: message.type,
      flags: message.flags,
    };
    if (message.guildId) api.guild_id = message.guildId;
    if (message.referencedId) {
      api.message_reference = {
        message_id: message.referencedId,
        channel_id: this.messages.get(message.referencedId)?.channelId,
      };
      api.referenced_message = this.apiMessage(message.referencedId);
    }
    const reactions = [...message.reactions.entries()].filter(([, users]) => users.size > 0);
    if (reactions.length > 0) {
      api.reactions = reactions.map(([emoji, users]) => ({
        emoji: { id: null, name: emoji },
        count: users.size,
        me: users.has(this.bot.id),
      }));
    }
    return api;
  }

  /** The GUILD_CREATE payload of a guild: its channels, active threads, roles and the bot's membership. */
  apiGuild(guildId: string): Record<string, unknown> {
    const guild = this.guilds.get(guildId);
    if (!guild) throw new Error(`fake discord: unknown guild ${guildId}`);
    const channels = [...this.channels.values()].filter((channel) => channel.guildId === guildId);
    return {
      id: guild.id,
      name: guild.name,
      icon: null,
      owner_id: [...guild.members.keys()][0],
      unavailable: false,
      joined_at: new Date(0).toISOString(),
      large: false,
      member_count: guild.members.size,
      roles: guild.roles.map((role, position) => ({
        id: role.id,
        name: role.name,
        permissions: "0",
        position,
        color: 0,
        hoist: false,
        managed: role.botId !== undefined,
        mentionable: false,
        flags: 0,
        ...(role.botId ? { tags: { bot_id: role.botId } } : {}),
      })),
      members: [this.apiMember(guildId, this.bot.id, true)],
      channels: channels.filter((c) => c.type !== CHANNEL.publicThread).map((c) => this.apiChannel(c.id)),
      threads: channels.filter((c) => c.type === CHANNEL.publicThread).map((c) => this.apiChannel(c.id)),
      emojis: [],
      stickers: [],
      features: [],
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
      afk_timeout: 300,
      verification_level: 0,
      default_message_notifications: 0,
      explicit_content_filter: 0,
      mfa_level: 0,
      premium_tier: 0,
      nsfw_level: 0,
      preferred_locale: "en-US",
      system_channel_id: null,
      premium_progress_bar_enabled: false,
    };
  }
}
