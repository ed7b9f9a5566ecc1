import type { ReceivedRequest } from "../fakes/openai-server.js";

/** The text contents of a chat-completions request's messages with `role`, in order. */
function texts(request: ReceivedRequest | undefined, role: string): string[] {
  const messages =
    (request?.body as { messages?: { role: string; content: unknown }[] } | undefined)?.messages ?? [];
  return messages
    .filter((message) => message.role === role)
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : (message.content as { text?: string }[]).map((part) => part.text ?? "").join(""),
    );
}

/** The text of every user message of a model request, in order. */
export function userTexts(request: ReceivedRequest | undefined): string[] {
  return texts(request, "user");
}

/** The tool results of a model request (`role: "tool"` contents), in order. */
export function toolResults(request: ReceivedRequest | undefined): string[] {
  return texts(request, "tool");
}

/** The `[tN]` tag an end-to-end test puts in a conversation's first user message. */
export function conversationTag(request: ReceivedRequest): string | undefined {
  return /\[(t\d+)\]/.exec(userTexts(request)[0] ?? "")?.[1];
}
