import type { ChatAccess } from "../chat/index.js";

/**
 * Who may talk to the bot on Discord: the shared {@link ChatAccess} (`channels` — a thread counts as its
 * parent channel, DMs are not affected —, `users` besides members with `roles`, `directMessages`, still
 * subject to `users` / `roles`) plus Discord's own lists. Every list is of Discord ids; an empty list does
 * not restrict.
 */
export interface DiscordAccess extends ChatAccess {
  /** Guilds (servers) the bot answers in. */
  guilds: readonly string[];
  /** Members with one of these roles may use the bot (besides `users`). Only checkable in guilds. */
  roles: readonly string[];
}

/** No restriction at all. */
export const OPEN_ACCESS: DiscordAccess = {
  guilds: [],
  channels: [],
  roles: [],
  users: [],
  directMessages: true,
};

/** The facts of one event the access rules look at. */
export interface AccessSubject {
  /** Absent for DMs. */
  guildId: string | undefined;
  /** The channel of the event and, for threads, the parent channel. */
  channelIds: readonly string[];
  userId: string;
  /** The member's roles (empty in DMs or when unknown). */
  roleIds: readonly string[];
}

/**
 * True when `subject` passes every configured list: the guild list (guild events only), the channel list
 * (guild events only; a thread passes through its parent), the DM switch (DMs only), and — when users or
 * roles are configured — the author being a listed user or holding a listed role. Pure; never throws.
 */
export function isAllowed(access: DiscordAccess, subject: AccessSubject): boolean {
  if (subject.guildId === undefined) {
    if (!access.directMessages) return false;
  } else {
    if (access.guilds.length > 0 && !access.guilds.includes(subject.guildId)) return false;
    if (access.channels.length > 0 && !subject.channelIds.some((id) => access.channels.includes(id))) {
      return false;
    }
  }
  if (access.users.length === 0 && access.roles.length === 0) return true;
  if (access.users.includes(subject.userId)) return true;
  return subject.roleIds.some((id) => access.roles.includes(id));
}
