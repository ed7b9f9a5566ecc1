import type { Redis } from "ioredis";
import type { FakeOpenAIServer, FakeReply, ReceivedRequest } from "../fakes/openai-server.js";
import { conversationTag } from "./model-requests.js";
import { connect, deletePrefix, uniquePrefix } from "./redis.js";

/** One scripted model answer, or a function producing it (may wait, e.g. until the test releases it). */
export type ModelStep = FakeReply | ((request: ReceivedRequest) => FakeReply | Promise<FakeReply>);

/**
 * What every end-to-end harness shares (Slack's, Discord's): a key prefix of its own on the suites' Redis,
 * a fake model whose replies are scripted per conversation tag — each test's first message carries `[tN]`,
 * and requests whose first user message has that tag take the tag's next step — and polling helpers.
 * A platform's harness extends it with its fake platform and its `threadline` processes.
 */
export abstract class ScriptedE2E {
  readonly prefix: string;
  readonly redis: Redis = connect();
  private readonly scripts = new Map<string, ModelStep[]>();
  protected tagSeq = 0;

  protected constructor(
    readonly openai: FakeOpenAIServer,
    prefixName: string,
  ) {
    this.prefix = uniquePrefix(prefixName);
    openai.handler = (request) => this.answer(request);
  }

  /** A fresh tag for one test's conversation, with its model script. */
  tag(...steps: ModelStep[]): string {
    const tag = `t${++this.tagSeq}`;
    this.scripts.set(tag, steps);
    return tag;
  }

  /** The chat-completion requests of a tag's conversation, in arrival order. */
  requests(tag: string): ReceivedRequest[] {
    return this.openai.requests.filter((request) => conversationTag(request) === tag);
  }

  /** Polls `check` every 20 ms until it is true; rejects after `timeoutMs` naming `what`. */
  async until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Closes the fake model and removes the harness's keys; the platform's harness stops its processes first. */
  protected async closeShared(): Promise<void> {
    await this.openai.close();
    await deletePrefix(this.redis, this.prefix);
    this.redis.disconnect();
  }

  private async answer(request: ReceivedRequest): Promise<FakeReply | undefined> {
    if (request.path !== "/chat/completions") return undefined;
    const tag = conversationTag(request);
    const step = tag === undefined ? undefined : this.scripts.get(tag)?.shift();
    if (step === undefined) {
      return { kind: "error", status: 500, message: `no scripted reply for ${tag ?? "an untagged request"}` };
    }
    return typeof step === "function" ? step(request) : step;
  }
}
