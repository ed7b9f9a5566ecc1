import { type ChatOutbound, createRunRenderer, type RunRenderer, type ThreadRef } from "../chat/index.js";
import type { RunsConfig } from "./config.js";
import { threadKeys } from "./keys.js";
import type { RunJobData } from "./queue.js";
import type { RedisClient } from "./redis-client.js";
import { ReplyLog } from "./reply-log.js";
import type { RunLogger } from "./setup.js";

/** What {@link openRunReply} needs. */
export interface RunReplyOptions {
  redis: RedisClient;
  config: RunsConfig;
  job: RunJobData;
  outbound: ChatOutbound;
  thread: ThreadRef;
  /** The footer under the reply: the thread's setting, else the config's. */
  footer: RunsConfig["footer"];
  log: RunLogger;
  fields: Record<string, unknown>;
}

/**
 * The run's reply in the chat: settles what a previous attempt of this run left showing, then returns the
 * renderer whose posts are logged for the next attempt. Chat failures are logged, never thrown; may reject
 * when Redis does.
 */
export async function openRunReply(options: RunReplyOptions): Promise<RunRenderer> {
  const { config, job, log, fields } = options;
  // A previous attempt's reply (its worker died) still shows its running tool lines: settle them first.
  const replies = new ReplyLog(
    options.redis,
    threadKeys(config.prefix, job.threadId).replies(job.runId),
    log,
    fields,
  );
  await replies.settlePrevious(options.outbound, options.thread);
  return createRunRenderer({
    outbound: replies.track(options.outbound),
    thread: options.thread,
    footer: options.footer,
    maxMessages: config.replyMaxMessages,
    maxAnswerChars: config.replyMaxChars,
    onError: (err, operation) => log.warn({ ...fields, err, operation }, "chat update failed"),
  });
}
