import type { ChatOutbound, PostedMessage, ReplyPart, ThreadRef } from "../chat/index.js";
import type { RedisClient } from "./redis-client.js";
import type { RunLogger } from "./setup.js";

/** What a settled progress line says instead of "running": the worker that ran the tool is gone. */
export const INTERRUPTED_LINE_TEXT = "⚠️ interrupted — worker restarted";

/** How long a run's reply record outlives its last write (a run that was never resumed). */
export const REPLY_LOG_TTL_MS = 24 * 60 * 60_000;

/** KEYS[1] the record; ARGV message id, text, TTL in ms. One command, so no crash leaves it without a TTL. */
const NOTE_LUA = `
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2])
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return 1`;

interface NoteCommand {
  tlReplyNote(key: string, messageId: string, text: string, ttlMs: number): Promise<unknown>;
}

/** Connections the script is defined on. */
const defined = new WeakSet<RedisClient>();

/**
 * A running tool's progress line as the renderer writes it (`🔧 name …`, maybe followed by the tool's own
 * progress text), in any dialect: the marker and the ellipsis survive conversion.
 */
const RUNNING_LINE = /^(🔧 .+?) …(?: .*)?$/gmu;

/** `text` with every running progress line settled as interrupted; the same string when there is none. */
export function settleRunningLines(text: string): string {
  return text.replace(RUNNING_LINE, `$1 ${INTERRUPTED_LINE_TEXT}`);
}

function showsRunningLine(text: string): boolean {
  RUNNING_LINE.lastIndex = 0;
  const found = RUNNING_LINE.test(text);
  RUNNING_LINE.lastIndex = 0;
  return found;
}

/**
 * The reply messages of one run that show a running tool line right now, kept in Redis (a hash message
 * id → the text last posted, under the run's own key) so that the worker that resumes a run after a
 * crash can settle the dead worker's stale `🔧 tool …` lines in those very messages. Only messages with a
 * running line are written (a plain streamed answer costs no Redis write); a message whose line settled is
 * dropped again, so a run that ends normally leaves nothing. Writes are fire-and-forget (a failure is
 * logged: at worst a stale line stays after a crash); nothing here throws.
 */
export class ReplyLog {
  /** Message ids this run wrote to the record. */
  private readonly stored = new Set<string>();

  private readonly redis: RedisClient & NoteCommand;

  constructor(
    redis: RedisClient,
    private readonly key: string,
    private readonly log: RunLogger,
    private readonly fields: Record<string, unknown>,
  ) {
    if (!defined.has(redis)) {
      redis.defineCommand("tlReplyNote", { numberOfKeys: 1, lua: NOTE_LUA });
      defined.add(redis);
    }
    this.redis = redis as RedisClient & NoteCommand;
  }

  /**
   * Settles what a previous attempt of this run left: edits each recorded message so its running lines
   * say {@link INTERRUPTED_LINE_TEXT}, then forgets the record. Call before this attempt posts anything.
   * Resolves once done; never rejects.
   */
  async settlePrevious(outbound: ChatOutbound, thread: ThreadRef): Promise<void> {
    let previous: Record<string, string>;
    try {
      previous = await this.redis.hgetall(this.key);
    } catch (err) {
      this.log.warn({ ...this.fields, err }, "reply record not read (Redis error)");
      return;
    }
    const entries = Object.entries(previous);
    if (entries.length === 0) return;
    for (const [messageId, text] of entries) {
      try {
        await outbound.edit(thread, messageId, settleRunningLines(text));
      } catch (err) {
        this.log.warn({ ...this.fields, err, messageId }, "stale progress line not settled");
      }
    }
    this.log.info(
      { ...this.fields, messages: entries.length },
      "settled the interrupted attempt's progress lines",
    );
    await this.redis.del(this.key).catch(() => {});
  }

  /** `outbound` whose `post` and `edit` keep the record current; every other member is the original's. */
  track(outbound: ChatOutbound): ChatOutbound {
    const post = async (thread: ThreadRef, text: string, parts?: ReplyPart[]): Promise<PostedMessage> => {
      const posted = await outbound.post(thread, text, parts);
      this.note(posted.id, text);
      return posted;
    };
    const edit = async (thread: ThreadRef, messageId: string, text: string, parts?: ReplyPart[]) => {
      await outbound.edit(thread, messageId, text, parts);
      this.note(messageId, text);
    };
    const bound = new Map<PropertyKey, unknown>();
    return new Proxy(outbound, {
      get(target, property) {
        if (property === "post") return post;
        if (property === "edit") return edit;
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== "function") return value;
        let fn = bound.get(property);
        if (!fn) {
          fn = (value as (...args: unknown[]) => unknown).bind(target);
          bound.set(property, fn);
        }
        return fn;
      },
    });
  }

  private note(messageId: string, text: string): void {
    // The set changes at once (not when the write answers): writes of one message are issued in call order,
    // and Redis applies them in that order because each is one command (the write and its TTL in one
    // script). Not a MULTI: on an auto-pipelined connection a transaction is written at once, ahead of an
    // HDEL still queued.
    let write: Promise<unknown> | undefined;
    if (showsRunningLine(text)) {
      this.stored.add(messageId);
      write = this.redis.tlReplyNote(this.key, messageId, text, REPLY_LOG_TTL_MS);
    } else if (this.stored.delete(messageId)) {
      write = this.redis.hdel(this.key, messageId);
    }
    write?.catch((err: unknown) =>
      this.log.warn({ ...this.fields, err, messageId }, "reply record not written"),
    );
  }
}
