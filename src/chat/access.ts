import type { ChatLogger } from "./logger.js";

/**
 * The allowlist settings every platform shares. Every list holds platform ids; an empty list does not
 * restrict. Adapters extend it with what only their platform has (Slack's workspaces and bots, Discord's
 * guilds and roles); they apply it before anything else happens with an event, and drop what fails.
 */
export interface ChatAccess {
  /** Channels the bot answers in (a thread counts as its channel). */
  channels: readonly string[];
  /** Users who may talk to the bot. */
  users: readonly string[];
  /** Whether direct messages to the bot are answered (still subject to `users`). Default `true`. */
  directMessages: boolean;
}

/** True when `id` passes `list`: an empty list allows every id, `undefined` passes only an empty list. */
export function allowed(list: readonly string[], id: string | undefined): boolean {
  return list.length === 0 || (id !== undefined && list.includes(id));
}

/** An access setting as callers may still write it: `allowDMs` is the old spelling of `directMessages`. */
export type AccessInput<A extends ChatAccess> = Omit<A, "directMessages"> & {
  directMessages?: boolean;
  /** @deprecated Spell it `directMessages`; still read (with a warning in the log) for older setups. */
  allowDMs?: boolean;
};

/**
 * The access setting with the old `allowDMs` spelling read as `directMessages` (logging one deprecation
 * warning naming `platform`); `directMessages` wins when both are given, and defaults to `true`. Pure
 * apart from the log line; never throws.
 */
export function normalizeAccess<A extends ChatAccess>(
  input: AccessInput<A>,
  log: Pick<ChatLogger, "warn">,
  platform: string,
): A {
  const { allowDMs, directMessages, ...rest } = input;
  if (allowDMs !== undefined) {
    log.warn(
      { platform, setting: "allowDMs" },
      `${platform}: access.allowDMs is deprecated; spell it access.directMessages`,
    );
  }
  return { ...rest, directMessages: directMessages ?? allowDMs ?? true } as unknown as A;
}
