/**
 * The shape of the playground's Redis keys and channel. They are built in `src/runs/keys.ts`
 * (`playgroundKeys`), with every other key, and handed to the playground by the app. Per-thread keys share
 * the hash tag `{pg:<thread>}`, so the multi-key transaction of a post also works on Redis Cluster.
 */

/** Keys of one playground thread. */
export interface PlaygroundThreadKeys {
  /**
   * Hash of the thread's messages, one field per attribute: `k:<id>` kind, `h:<id>` JSON head (author,
   * sentAt, mentionsBot), `a:<id>` author id, `t:<id>` text, `c:<id>` approval card JSON, `e:<id>` edited at,
   * `d:<id>` deleted. Split into fields so an edit writes one field without reading the message back.
   */
  messages: string;
  /** List of message ids in posting order. */
  order: string;
  /** Hash `JSON [messageId, emoji, userId]` → JSON `{ user, at }`: who reacted with what, and when. */
  reactions: string;
  /** Hash: title, createdAt, createdBy (JSON), status. */
  meta: string;
}

/** Keys shared by all playground threads. */
export interface PlaygroundKeys {
  /** Sorted set of thread ids scored by last activity (ms since epoch). */
  threads: string;
  /** Pub/sub channel carrying every change as JSON (see `PlaygroundEvent`). */
  events: string;
  thread(threadId: string): PlaygroundThreadKeys;
}
