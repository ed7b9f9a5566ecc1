import { type ChatUser, ExpiringMap } from "../chat/index.js";
import type { SlackApi } from "./api.js";
import type { SeenMessages } from "./seen-messages.js";

export { ExpiringMap };

/**
 * Display names of Slack users (`users.info`: display name, else real name, else handle), cached for an
 * hour. A failed lookup falls back to the user id and is not cached. Concurrent lookups of one user share
 * one call.
 */
export class UserNames {
  private readonly cache = new ExpiringMap<Promise<string>>(10_000, 60 * 60 * 1000);

  constructor(private readonly api: SlackApi) {}

  /** The user with a display name; never rejects. */
  async user(team: string, id: string, isBot = false): Promise<ChatUser> {
    const user: ChatUser = { id, name: await this.name(team, id) };
    if (isBot) user.isBot = true;
    return user;
  }

  private name(team: string, id: string): Promise<string> {
    const key = `${team}:${id}`;
    let pending = this.cache.get(key);
    if (pending === undefined) {
      pending = this.lookup(team, id).catch(() => {
        this.cache.delete(key);
        return id;
      });
      this.cache.set(key, pending);
    }
    return pending;
  }

  private async lookup(team: string, id: string): Promise<string> {
    const result = await this.api.call("users.info", { team }, { user: id });
    const user = result.user as
      | { name?: string; real_name?: string; profile?: { display_name?: string; real_name?: string } }
      | undefined;
    const candidates = [user?.profile?.display_name, user?.profile?.real_name, user?.real_name, user?.name];
    return candidates.find((name) => typeof name === "string" && name.trim() !== "") ?? id;
  }
}

/**
 * Which thread a message belongs to (Slack's reaction events name only the message). Answers from what
 * this gateway has seen, else from what any gateway recorded (`seen`), else asks `conversations.replies`
 * (whose first message carries the thread's `thread_ts`) — only within its budget, never waiting for it
 * (a distributed non-Marketplace app gets 1 call a minute:
 * https://docs.slack.dev/reference/methods/conversations.replies) — and remembers the answer.
 */
export class ThreadLookup {
  private readonly known = new ExpiringMap<string>(50_000, 24 * 60 * 60 * 1000);

  constructor(
    private readonly api: SlackApi,
    private readonly seen?: SeenMessages,
  ) {}

  /** Records that message `ts` in `channel` belongs to thread `threadTs`. */
  remember(channel: string, ts: string, threadTs: string): void {
    this.known.set(`${channel}:${ts}`, threadTs);
  }

  /** The thread ts of message `ts`; the message itself when Slack cannot tell. Never rejects. */
  async threadOf(team: string, channel: string, ts: string): Promise<string> {
    const cached = this.known.get(`${channel}:${ts}`);
    if (cached !== undefined) return cached;
    try {
      const recorded = await this.seen?.threadOf(team, channel, ts);
      if (recorded !== undefined) {
        this.remember(channel, ts, recorded);
        return recorded;
      }
      const result = await this.api.tryCall(
        "conversations.replies",
        { team, channel },
        { channel, ts, limit: 1 },
      );
      // No budget left: the reaction is taken as being about a thread of its own (the message itself).
      if (result === undefined) return ts;
      const first = (result.messages as { thread_ts?: string }[] | undefined)?.[0];
      const threadTs = first?.thread_ts ?? ts;
      this.remember(channel, ts, threadTs);
      return threadTs;
    } catch {
      return ts;
    }
  }
}
