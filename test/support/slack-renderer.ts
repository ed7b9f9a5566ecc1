import { type ChatOutbound, createRunRenderer, type ThreadRef } from "../../src/chat/index.js";
import { createSlackClient, SlackApi } from "../../src/slack/api.js";
import { memoryRecipientStore, SlackOutbound, type SlackOutboundOptions } from "../../src/slack/index.js";
import { FakeSlackServer } from "../fakes/slack-server.js";

const FAST_RETRY = { retries: 2, factor: 1, minTimeout: 10, maxTimeout: 20 };

export interface SlackRendererOptions {
  /** Alice's message in channel C1 that opens the thread. */
  text: string;
  /** Options of the real {@link SlackOutbound} besides its API and recipients (streaming, feedback…). */
  outbound?: Omit<SlackOutboundOptions, "api" | "recipients">;
  /** Wraps the outbound before the renderer gets it (e.g. `watchApprovals`). */
  wrap?: (outbound: ChatOutbound) => ChatOutbound;
  /** The renderer's stats footer. Default `true`. */
  footer?: boolean;
}

/**
 * One run's renderer on the real Slack outbound against a fresh fake Slack: Alice's root message in C1 is
 * the thread (she is its stream recipient); the outbound calls that rejected are collected in `errors`.
 * The caller closes `slack`.
 */
export async function startSlackRenderer(options: SlackRendererOptions) {
  const slack = await FakeSlackServer.start();
  const recipients = memoryRecipientStore();
  const api = new SlackApi(
    createSlackClient({ token: slack.config.botToken, apiUrl: slack.apiUrl, retry: FAST_RETRY }),
  );
  const real = new SlackOutbound({ api, recipients, ...options.outbound });
  const outbound = options.wrap ? options.wrap(real) : real;
  const root = slack.post({ user: "U0ALICE", channel: "C1", text: options.text });
  const thread: ThreadRef = {
    platform: "slack",
    workspace: slack.config.teamId,
    channel: "C1",
    thread: root.ts,
  };
  await recipients.set(thread, "U0ALICE");
  const errors: string[] = [];
  const renderer = createRunRenderer({
    outbound,
    thread,
    ...(options.footer === undefined ? {} : { footer: options.footer }),
    onError: (err, operation) =>
      errors.push(`${operation}: ${err instanceof Error ? err.message : String(err)}`),
  });
  /** The bot's messages in the thread that were not deleted, oldest first. */
  const bot = () => slack.store.botMessages("C1", root.ts, slack.config.botUserId).filter((m) => !m.deleted);
  return { slack, outbound, thread, root, renderer, errors, bot };
}
