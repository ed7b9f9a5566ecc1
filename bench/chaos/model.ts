import { randomUUID } from "node:crypto";
import {
  chunks,
  type FakeOpenAIServer,
  type FakeReply,
  toolCallReply,
} from "../../test/fakes/openai-server.js";

/** `[c<thread>.<seq>]`: the tag of every chaos message (thread index, send order within the thread). */
export const TAG = /\[c(\d+)\.(\d+)\]/;

interface WireMessage {
  role: string;
  content?: unknown;
}

function textOf(message: WireMessage | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? "").join("");
  return "";
}

/**
 * The scripted model of the chaos run, answering every chat request of the fake OpenAI server: when the
 * conversation ends with a user message it calls `record` once with a fresh nonce (and the thread's tag);
 * when it ends with the tool's result it answers in a few streamed pieces. So every answer has exactly one
 * side effect, and each side effect has a nonce no other call carries. `chunkDelayMs` paces every chunk.
 */
export class ChaosModel {
  requests = 0;
  toolCalls = 0;
  answers = 0;

  constructor(server: FakeOpenAIServer, chunkDelayMs: number) {
    server.handler = (request) => {
      if (request.path !== "/chat/completions") return undefined;
      this.requests++;
      const messages = (request.body as { messages?: WireMessage[] } | undefined)?.messages ?? [];
      return this.reply(messages, chunkDelayMs);
    };
  }

  private reply(messages: WireMessage[], delayMs: number): FakeReply {
    const last = messages.at(-1);
    if (last?.role === "tool") {
      this.answers++;
      const recorded = /recorded (\S+)/.exec(textOf(last))?.[1] ?? "nothing";
      const pieces = ["Done: ", `recorded ${recorded}`, " for you", "."];
      return {
        kind: "stream",
        chunks: [chunks.role(), ...pieces.map(chunks.text), chunks.finish("stop"), chunks.usage(50, 8)],
        delayMs,
      };
    }
    const lastUser = [...messages].reverse().find((message) => message.role === "user");
    const thread = TAG.exec(textOf(lastUser))?.[1];
    this.toolCalls++;
    const nonce = randomUUID();
    const reply = toolCallReply(
      [
        {
          id: `call_${nonce.slice(0, 8)}`,
          name: "record",
          arguments: { nonce, thread: `c${thread ?? "?"}` },
        },
      ],
      { fragmentSize: 48 },
    );
    return { ...reply, delayMs };
  }
}
