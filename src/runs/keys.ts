/**
 * Every Redis key Threadline uses is built here. All per-thread keys share the hash tag `{<thread id>}` so
 * multi-key scripts run on Redis Cluster too.
 */

/** Keys of one thread. */
export interface ThreadKeys {
  /** Hash: engaged, startedBy, createdAt, lastActivity, run (active run id), stopBy. */
  meta: string;
  /** String: the active run id, with a TTL (the liveness lease). Present ⇔ a run is active. */
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
  /** Set of tool names always allowed in this thread. */
  allow: string;
  /** Hash toolCallId → JSON {result, isError} of finished tool calls (crash recovery). */
  toolResults: string;
  /** Hash: one pending or decided approval. */
  approval: (approvalId: string) => string;
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
    toolResults: `${base}:toolres`,
    approval: (approvalId) => `${base}:approval:${approvalId}`,
  };
}

/** The pub/sub channel that carries aborts and approval decisions to workers. */
export function eventsChannel(prefix: string): string {
  return `${prefix}:events`;
}

/** BullMQ's key prefix: one hash tag so the queue's keys live in one Cluster slot. */
export function queuePrefix(prefix: string): string {
  return `{${prefix}:bull}`;
}

/** The BullMQ queue that carries runs. */
export const RUN_QUEUE = "runs";
