/**
 * Every Redis key Threadline uses is built here. All per-thread keys share the hash tag `{<thread id>}` so
 * multi-key scripts run on Redis Cluster too.
 */

import { threadId as encodeThreadId, type ThreadRef } from "../chat/index.js";

/** Keys of one thread. */
export interface ThreadKeys {
  /**
   * Hash: engaged, startedBy, createdAt, lastActivity, requester, run (active run id, "" when idle),
   * runStartedAt, stopBy, fence (the last fencing token number handed out).
   */
  meta: string;
  /**
   * String: the fencing token of the claim that owns the active run (`<runId>#<n>`; `#0` until a worker
   * claims it), with a TTL (the liveness lease). Present ⇔ a run is active.
   */
  lease: string;
  /** List of JSON agent messages, in transcript order. */
  transcript: string;
  /** List of queued message ids, oldest first. */
  inbox: string;
  /** List of ids a worker drained but has not injected yet. */
  inflight: string;
  /** Hash id → queued | inflight | delivered | withdrawn | refused | notprocessed | command. Doubles as the dedupe set. */
  state: string;
  /** Hash id → prompt | steer | followUp. */
  disposition: string;
  /** Hash id → the JSON agent message (author-prefixed user message) as it will enter the transcript. */
  body: string;
  /** Hash id → JSON {messageId, author, receivedAt} for reporting deliveries. */
  origin: string;
  /** Set of `user:<id>:<tool>` (allowed for that requester) and `thread:<tool>` (for everyone) entries. */
  allow: string;
  /**
   * Hash call key → JSON record of the active run's tool calls: `{status: "executing"}` written right
   * before `execute`, `{status: "done", result, isError}` after it (crash recovery). The call key is
   * `<transcript index of the assistant message>:<tool-call id>`, unique within the thread, because
   * servers reuse tool-call ids (`call_0` in every response).
   */
  calls: string;
  /** Hash call key → approval id of the active run's approval requests (a resumed run finds its card). */
  approvals: string;
  /**
   * Hash approval id → tool name of the active run's approvals still waiting for a decision: written by the
   * create script, cleared by decide/settle/release, read by submit (a reply's author is told a card waits).
   */
  pending: string;
  /** Hash: one pending or decided approval, by its random id. */
  approval: (approvalId: string) => string;
  /**
   * Hash message id → text last posted, of one run's reply messages that show a running tool line (see
   * `ReplyLog`): what the worker resuming the run after a crash settles. Expires a day after its last write.
   */
  replies: (runId: string) => string;
}

/** Builds the keys of one thread under `prefix`. */
export function threadKeys(prefix: string, threadId: string): ThreadKeys {
  const base = `${prefix}:{${threadId}}`;
  return {
    meta: `${base}:meta`,
    lease: `${base}:lease`,
    transcript: `${base}:transcript`,
    inbox: `${base}:inbox`,
    inflight: `${base}:inflight`,
    state: `${base}:state`,
    disposition: `${base}:disposition`,
    body: `${base}:body`,
    origin: `${base}:origin`,
    allow: `${base}:allow`,
    calls: `${base}:calls`,
    approvals: `${base}:approvals`,
    pending: `${base}:pending`,
    approval: (approvalId) => `${base}:approval:${approvalId}`,
    replies: (runId) => `${base}:replies:${runId}`,
  };
}

/** What a spend counter sums: one thread, one user, one channel or one workspace/guild, per UTC day. */
export type SpendScope = "thread" | "user" | "channel" | "workspace";

/**
 * Hash of one spend counter for one UTC day (`YYYY-MM-DD`): `tokens`, `usd`, `requests`, and `r:<id>`
 * reservations of requests in flight. The thread's counter shares the thread's hash tag; the others are
 * global keys, so a script that touches several (settle, release) is sent once per Cluster slot among them.
 */
export function spendKey(prefix: string, scope: SpendScope, id: string, day: string): string {
  if (scope === "thread") return `${prefix}:{${id}}:spend:${day}`;
  return `${prefix}:spend:${day}:${scope}:${id}`;
}

/** The pub/sub channel that carries aborts and approval decisions to workers. */
export function eventsChannel(prefix: string): string {
  return `${prefix}:events`;
}

/**
 * Sorted set of thread ids whose start is in doubt (score: when the gateway began submitting): written
 * before a message is submitted and cleared once a started run's job is added, so the start sweeper finds
 * a run that took its lease but never got its job (a gateway that died between the two steps).
 */
export function pendingStartsKey(prefix: string): string {
  return `${prefix}:starts`;
}

/** A member of the pending-starts set: the thread and the message being submitted. */
export function pendingStartMember(threadId: string, messageId: string): string {
  return JSON.stringify([threadId, messageId]);
}

/** The thread and message of a pending-starts member; undefined for an unreadable one. */
export function parsePendingStartMember(member: string): { threadId: string; messageId: string } | undefined {
  try {
    const [threadId, messageId] = JSON.parse(member) as unknown[];
    if (typeof threadId === "string" && typeof messageId === "string") return { threadId, messageId };
  } catch {
    // unreadable: dropped by the sweeper
  }
  return undefined;
}

/** BullMQ's key prefix: one hash tag so the queue's keys live in one Cluster slot. */
export function queuePrefix(prefix: string): string {
  return `{${prefix}:bull}`;
}

/** Keys the Slack adapter keeps outside a thread's hash tag (single-key commands only). */
export interface SlackKeys {
  /** String: the latest author who addressed the bot in a thread (the streamed reply's recipient). */
  recipient: (thread: ThreadRef) => string;
  /** String: a thread's agent session title (the request that started it). */
  title: (thread: ThreadRef) => string;
  /** Key prefix of one Web API method's budget counters (the limiter appends `<team>[:<channel>]`). */
  rateLimit: (method: string) => string;
  /** The keys of the messages the gateway saw in a thread (the thread's hash tag: one MULTI on Redis Cluster). */
  seen: (thread: ThreadRef) => SlackSeenKeys;
  /** String: the thread ts of one seen message, by team, channel and message ts. */
  seenMessage: (team: string, channel: string, ts: string) => string;
  /** Key prefix of the feedback each user last gave on each answer (strings, a day). */
  feedback: string;
}

/** The seen-message keys of one Slack thread (`<prefix>:{<thread id>}:slack-seen…`). */
export interface SlackSeenKeys {
  /** List of JSON entries (messages, edits, deletions) the gateway received, oldest first. */
  list: string;
  /** List of JSON entries `conversations.replies` returned (kept apart from `list`). */
  fetched: string;
  /** Hash: `seen`, `root`, `self`, `fetched`, `cursor`. */
  meta: string;
}

/**
 * The Slack adapter's keys under `prefix`: `<prefix>:slack-recipient|slack-title:<team>:<channel>:<thread>`,
 * `<prefix>:slack-rl:<method>…`, `<prefix>:{<thread id>}:slack-seen|slack-seen-fetched|slack-seen-meta`
 * and `<prefix>:slack-seen-msg:<team>:<channel>:<ts>`.
 */
export function slackKeys(prefix: string): SlackKeys {
  const key = (kind: string, thread: ThreadRef) =>
    `${prefix}:${kind}:${thread.workspace}:${thread.channel}:${thread.thread}`;
  return {
    recipient: (thread) => key("slack-recipient", thread),
    title: (thread) => key("slack-title", thread),
    rateLimit: (method) => `${prefix}:slack-rl:${method}`,
    seen: (thread) => {
      const base = `${prefix}:{${encodeThreadId(thread)}}`;
      return {
        list: `${base}:slack-seen`,
        fetched: `${base}:slack-seen-fetched`,
        meta: `${base}:slack-seen-meta`,
      };
    },
    seenMessage: (team, channel, ts) => `${prefix}:slack-seen-msg:${team}:${channel}:${ts}`,
    feedback: `${prefix}:slack-feedback`,
  };
}

/**
 * Key prefix of Discord's global REST budget counters (shared by every gateway and worker of the bot): the
 * budget counts every request under it and the low-priority share under `…:low`.
 */
export function discordRestBudgetPrefix(prefix: string): string {
  return `${prefix}:discord:rest`;
}

/** The BullMQ queue that carries runs. */
export const RUN_QUEUE = "runs";

/**
 * The playground's keys under `prefix` (the shape and meaning of each: `PlaygroundKeys` in
 * `src/playground/keys.ts`): `<prefix>:playground:threads|events` and, per thread, `messages`, `order`,
 * `reactions` and `meta` under `<prefix>:playground:{pg:<thread>}`, so the multi-key transaction of a post
 * also works on Redis Cluster.
 */
export function playgroundKeys(prefix: string) {
  const base = `${prefix}:playground`;
  return {
    threads: `${base}:threads`,
    events: `${base}:events`,
    thread(threadId: string) {
      const tagged = `${base}:{pg:${threadId}}`;
      return {
        messages: `${tagged}:messages`,
        order: `${tagged}:order`,
        reactions: `${tagged}:reactions`,
        meta: `${tagged}:meta`,
      };
    },
  };
}
