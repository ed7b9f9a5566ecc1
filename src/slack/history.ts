import {
  DEFAULT_HISTORY_LIMITS,
  type HistoryLimits,
  type HistoryMessage,
  historyWindow,
  type ThreadRef,
} from "../chat/index.js";
import type { SlackApi } from "./api.js";
import { authorOf, type SlackMessageEvent, type SlackSelf, tsToMs, withoutBotMention } from "./events.js";
import type { UserNames } from "./lookups.js";
import type { SlackAccess } from "./options.js";
import { SLACK_HISTORY_TIERS } from "./rate-limit.js";
import { compareTs, type SeenMessage, type SeenMessages, type SeenThread } from "./seen-messages.js";

/** How an unseen thread is read from Slack. */
export interface HistoryFetch {
  /** `limit` of one `conversations.replies` page. Default 15 (the non-Marketplace tier). */
  pageSize: number;
  /** Pages read at most for one mention. Default 5. */
  maxPages: number;
  /** The whole lookup (store and Slack) takes at most this long; then what was read is used. Default 2,000 ms. */
  timeoutMs: number;
}

export const DEFAULT_HISTORY_FETCH: HistoryFetch = {
  pageSize: SLACK_HISTORY_TIERS["non-marketplace"].pageSize,
  maxPages: 5,
  timeoutMs: 2000,
};

/**
 * The earlier messages of `thread` before message `beforeTs`, for a mention inside a thread the bot has
 * not taken part in, oldest first, bounded by `limits`. They come from what the gateway already received
 * (`seen`); only a thread the gateway has not seen from its start is read from Slack with
 * `conversations.replies`, page by page with the cursor, each page within the method's budget without
 * waiting for it (Slack allows a distributed non-Marketplace app 1 call a minute and 15 messages a page:
 * https://docs.slack.dev/reference/methods/conversations.replies). Out of budget, slow, or failing, the
 * lookup goes on with what it has; it never takes longer than `fetch.timeoutMs`. What Slack returned is
 * kept in `seen`, and a read cut short goes on from its cursor at the next mention. Returns `[]` when the
 * bot has already posted in the thread (its transcript holds the conversation) or for a top-level message.
 * Never rejects.
 */
export async function threadHistory(options: {
  api: SlackApi;
  seen: SeenMessages;
  names: UserNames;
  self: SlackSelf;
  access: SlackAccess;
  thread: ThreadRef;
  beforeTs: string;
  limits?: HistoryLimits;
  fetch?: Partial<HistoryFetch>;
}): Promise<HistoryMessage[]> {
  const { thread, beforeTs, self } = options;
  if (thread.thread === beforeTs) return [];
  const limits = options.limits ?? DEFAULT_HISTORY_LIMITS;
  const fetch = { ...DEFAULT_HISTORY_FETCH, ...options.fetch };
  const found: Found = { lists: [], tookPart: false };
  const messages = await withDeadline(fetch.timeoutMs, found, () => gather(options, fetch, found));
  if (found.tookPart) return [];
  const earlier = messages.filter(
    (message) => message.ts !== undefined && compareTs(message.ts, beforeTs) < 0,
  );
  if (earlier.some((message) => authorOf(message, self, options.access).kind === "self")) return [];
  const kept: { id: string; text: string; sentAt: number; isBot: boolean }[] = [];
  const window = historyWindow(limits);
  for (const message of earlier.reverse()) {
    const author = authorOf(message, self, options.access);
    const text = withoutBotMention(message.text ?? "", self.userId);
    if (author.kind !== "person" || text === "") continue;
    if (!window.admit(text)) break;
    kept.unshift({ id: author.id, text, sentAt: tsToMs(message.ts!), isBot: author.isBot });
  }
  return Promise.all(
    kept.map(async (entry) => ({
      author: await options.names.user(thread.workspace, entry.id, entry.isBot),
      text: entry.text,
      sentAt: entry.sentAt,
    })),
  );
}

/** What a lookup found so far: lists of messages (a later list's copy of a message wins). */
interface Found {
  lists: SeenMessage[][];
  tookPart: boolean;
}

/** The thread's messages: what was seen, completed from Slack when the thread is unseen. */
async function gather(
  options: { api: SlackApi; seen: SeenMessages; thread: ThreadRef },
  fetch: HistoryFetch,
  found: Found,
): Promise<void> {
  const { api, thread } = options;
  let seen: SeenThread;
  try {
    seen = await options.seen.read(thread);
  } catch {
    seen = { messages: [], complete: false, tookPart: false };
  }
  found.lists.push(seen.messages);
  found.tookPart = seen.tookPart;
  if (seen.complete || seen.tookPart) return;
  const fetched: SeenMessage[] = [];
  const known = new Set<string>();
  found.lists.unshift(fetched);
  let cursor = seen.cursor;
  let pages = 0;
  try {
    while (pages < fetch.maxPages) {
      const args: Record<string, unknown> = {
        channel: thread.channel,
        ts: thread.thread,
        limit: fetch.pageSize,
      };
      if (cursor !== undefined) args.cursor = cursor;
      // tryCall: with no budget left, answer with what was seen instead of waiting up to a minute.
      const result = await api.tryCall(
        "conversations.replies",
        { team: thread.workspace, channel: thread.channel },
        args,
      );
      if (result === undefined) break;
      pages++;
      const page = (result.messages as SlackMessageEvent[] | undefined) ?? [];
      // A message on two pages (the thread changed between calls) is kept once.
      for (const message of page) {
        if (message.ts === undefined || known.has(message.ts)) continue;
        known.add(message.ts);
        fetched.push(message);
      }
      const next = (result.response_metadata as { next_cursor?: string } | undefined)?.next_cursor;
      cursor = next ? next : undefined;
      if (cursor === undefined) break;
    }
  } catch {
    // Refused or rate limited by Slack: what was read so far still counts.
  }
  if (pages > 0) {
    await options.seen.addFetched(thread, fetched, cursor).catch(() => undefined);
  }
}

/**
 * Runs `work`, which fills `found` as it goes, for at most `ms`: then (or when it ends) the messages found
 * so far, merged by ts (later lists win) and sorted. Never rejects.
 */
async function withDeadline(ms: number, found: Found, work: () => Promise<void>): Promise<SeenMessage[]> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
  const byTs = new Map<string, SeenMessage>();
  for (const list of found.lists) for (const message of list) if (message.ts) byTs.set(message.ts, message);
  return [...byTs.values()].sort((a, b) => compareTs(a.ts!, b.ts!));
}
