/** Child `server`: the fake model server of the whole run. */
import { chunks, FakeOpenAIServer, type FakeReply } from "../../test/fakes/openai-server.js";
import { sendToParent } from "../support/child.js";
import { CHUNK_DELAY_MS, CHUNKS, TURNS } from "./settings.js";

export function sse(chunk: Record<string, unknown>): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** Turn `turn` of a streaming run: 20 text chunks 10 ms apart, the last one carrying the tool call. */
export function streamingReply(turn: number): FakeReply {
  const parts: string[] = [];
  for (let i = 0; i < CHUNKS; i++) parts.push(sse(chunks.text(`Word${i} `)));
  parts[0] = sse(chunks.role()) + parts[0];
  const tail =
    turn < TURNS - 1
      ? sse(chunks.toolCall(0, { id: `call_${turn}`, name: "noop", arguments: "{}" })) +
        sse(chunks.finish("tool_calls"))
      : sse(chunks.finish("stop"));
  parts[CHUNKS - 1] += tail + sse(chunks.usage(100, CHUNKS));
  return { kind: "stream", chunks: parts.map((raw) => ({ raw })), delayMs: CHUNK_DELAY_MS };
}

export async function serverChild(): Promise<void> {
  const server = await FakeOpenAIServer.start();
  const turns = new Map<number, FakeReply>();
  const parkCall: FakeReply = {
    kind: "stream",
    chunks: [
      chunks.role(),
      chunks.toolCall(0, { id: "call_deploy", name: "deploy", arguments: '{"value":"prod"}' }),
      chunks.finish("tool_calls"),
      chunks.usage(50, 5),
    ],
  };
  const parkDone: FakeReply = {
    kind: "stream",
    chunks: [chunks.role(), chunks.text("deployed"), chunks.finish("stop"), chunks.usage(60, 2)],
  };
  server.handler = (request) => {
    // Keep the request log from growing for the whole run.
    server.requests.length = 0;
    const body = request.body as { model?: string; messages?: { role?: string }[] } | undefined;
    const messages = body?.messages ?? [];
    if (body?.model === "park") return messages.at(-1)?.role === "tool" ? parkDone : parkCall;
    const turn = Math.min(TURNS - 1, messages.filter((m) => m.role === "assistant").length);
    let reply = turns.get(turn);
    if (!reply) {
      reply = streamingReply(turn);
      turns.set(turn, reply);
    }
    return reply;
  };
  sendToParent({ type: "ready", baseURL: server.baseURL });
  process.on("disconnect", () => void server.close().then(() => process.exit(0)));
}
