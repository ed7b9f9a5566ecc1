import type { TextContent, UserMessage } from "../agent/index.js";
import type { Attachment, IncomingMessage } from "../chat/index.js";

/** Marks a user message in the transcript with the chat message it came from. */
export interface ChatUserMessage extends UserMessage {
  /** Platform message id (for reactions and edits); not sent to the model. */
  chatMessageId?: string;
  /** Author's platform user id and display name. */
  authorId?: string;
  authorName?: string;
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function describeAttachment(file: Attachment): string {
  const facts = [file.mimeType, file.sizeBytes === undefined ? undefined : formatSize(file.sizeBytes)].filter(
    Boolean,
  );
  const head = facts.length > 0 ? `${file.name} (${facts.join(", ")})` : file.name;
  return file.url ? `${head} ${file.url}` : head;
}

/**
 * The transcript form of a chat message: one text block, prefixed with the author's display name so the
 * model can tell several people apart; earlier thread messages it carries (`history`) come first, marked
 * as such; shared files are listed after the text.
 */
export function toUserMessage(message: IncomingMessage): ChatUserMessage {
  let text = `${message.author.name}: ${message.text}`;
  if (message.history !== undefined && message.history.length > 0) {
    const earlier = message.history.map((entry) => `${entry.author.name}: ${entry.text}`).join("\n");
    text = `[Earlier messages in this thread]\n${earlier}\n[End of earlier messages]\n\n${text}`;
  }
  if (message.attachments.length > 0) {
    text += `\n[attached files: ${message.attachments.map(describeAttachment).join("; ")}]`;
  }
  const block: TextContent = { type: "text", text };
  return {
    role: "user",
    content: [block],
    timestamp: message.sentAt,
    chatMessageId: message.id,
    authorId: message.author.id,
    authorName: message.author.name,
  };
}
