import { type ThreadRef, threadId } from "../chat/index.js";
import { type CallScope, errorCode, type SlackApi, UNSUPPORTED_METHOD_CODES } from "./api.js";
import { type SessionStatus, sessionStatusArgs } from "./native-stream.js";
import type { SlackLogger } from "./options.js";

/** What {@link AgentSessions} needs. */
export interface AgentSessionsOptions {
  api: SlackApi;
  /** The title a thread's session is created with (the first call of a run names it). */
  titleOf?: (thread: ThreadRef) => Promise<string | undefined>;
  log: SlackLogger;
}

/** One thread's session as this process wants it and last sent it. */
interface ThreadSession {
  thread: ThreadRef;
  /** The status the run wants shown now. */
  wanted: SessionStatus;
  /** The status last sent (or given up on) for this thread; `undefined` until the first call went out. */
  sent: SessionStatus | undefined;
  /** The run ended: once `wanted` is sent (or nothing was ever sent), the thread is forgotten. */
  ended: boolean;
  /** A writer is sending for this thread. */
  writing: boolean;
  /** The title of the session's creating call, asked for when the run first wanted a status. */
  title: Promise<string | undefined>;
}

/**
 * The threads' agent sessions (`agents.sessions.setStatus`), written in the background.
 *
 * The method is Tier 3 (50 calls a minute per workspace, shared by every process) and every run moves its
 * session two to four times, so above about 25 new runs a minute the budget queues. Nothing of a run
 * waits for it: {@link set} records the status wanted and returns, and one writer per thread sends the
 * newest wanted status each time the budget grants a call (the arguments are built then, so a thread
 * that went processing → suspended → processing while it waited sends nothing more). A run whose first
 * call never went out before it ended sends nothing at all (its answer's `chat.stopStream` names the
 * session status anyway). Failures are logged, never thrown; a workspace without agent sessions is
 * remembered and skipped.
 */
export class AgentSessions {
  private readonly threads = new Map<string, ThreadSession>();
  private readonly unsupported = new Set<string>();
  private readonly writers = new Set<Promise<void>>();

  constructor(private readonly options: AgentSessionsOptions) {}

  /** The status the run in `thread` last asked for; `undefined` outside a run. */
  wanted(thread: ThreadRef): SessionStatus | undefined {
    const session = this.threads.get(threadId(thread));
    return session === undefined || session.ended ? undefined : session.wanted;
  }

  /**
   * Asks for `status` in `thread` and returns at once. `endsRun`: the run is over (a thread this process
   * never moved is left alone then).
   */
  set(thread: ThreadRef, status: SessionStatus, endsRun = false): void {
    if (this.unsupported.has(thread.workspace)) return;
    const key = threadId(thread);
    let session = this.threads.get(key);
    if (session === undefined) {
      if (endsRun) return;
      const title = this.options.titleOf?.(thread).catch(() => undefined) ?? Promise.resolve(undefined);
      session = { thread, wanted: status, sent: undefined, ended: false, writing: false, title };
      this.threads.set(key, session);
    }
    session.wanted = status;
    session.ended = endsRun;
    if (session.writing) return;
    session.writing = true;
    const writer = this.write(key, session).finally(() => this.writers.delete(writer));
    this.writers.add(writer);
  }

  /** Resolves once every status asked for so far is sent (or given up on). */
  async settled(): Promise<void> {
    while (this.writers.size > 0) await Promise.all(this.writers);
  }

  /** How many threads this process keeps a session for (ended ones are dropped once their status is out). */
  get size(): number {
    return this.threads.size;
  }

  /**
   * Remembers that `workspace` has no agent sessions and drops its threads: the idle ones now, the ones
   * whose writer is running when it stops.
   */
  private forgetWorkspace(workspace: string): void {
    this.unsupported.add(workspace);
    for (const [key, session] of this.threads) {
      if (session.thread.workspace === workspace && !session.writing) this.threads.delete(key);
    }
  }

  private async write(key: string, session: ThreadSession): Promise<void> {
    const { thread } = session;
    const done = () => session.sent === session.wanted || (session.sent === undefined && session.ended);
    try {
      while (!done()) {
        let sending: SessionStatus | undefined;
        try {
          await this.options.api.callWhenGranted("agents.sessions.setStatus", scope(thread), async () => {
            if (done() || this.unsupported.has(thread.workspace)) return undefined;
            sending = session.wanted;
            // The first call of a run creates the session, titled.
            const title = session.sent === undefined ? await session.title : undefined;
            return sessionStatusArgs(thread, sending, title);
          });
        } catch (err) {
          const code = errorCode(err);
          if (UNSUPPORTED_METHOD_CODES.has(code)) {
            this.forgetWorkspace(thread.workspace);
            this.options.log.info({ team: thread.workspace, code }, "slack: no agent sessions here");
            return;
          }
          this.options.log.warn(
            { team: thread.workspace, code, status: sending },
            "slack: could not set the session status",
          );
        }
        if (this.unsupported.has(thread.workspace)) return;
        // Nothing sent: the budget refused the call (a best-effort budget), or nothing was left to send.
        if (sending === undefined) return;
        // Sent, or given up on after the client's retries: either way the next call is for a newer status.
        session.sent = sending;
      }
    } finally {
      session.writing = false;
      // The loop ends when the newest wanted status is out: a run that is over is forgotten then.
      if (this.threads.get(key) === session && (session.ended || this.unsupported.has(thread.workspace))) {
        this.threads.delete(key);
      }
    }
  }
}

function scope(thread: ThreadRef): CallScope {
  return { team: thread.workspace, channel: thread.channel };
}
