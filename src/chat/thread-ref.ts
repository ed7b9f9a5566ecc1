import type { Platform, ThreadRef } from "./types.js";

const PLATFORMS: readonly Platform[] = ["slack", "discord", "playground"];

/**
 * Encodes a thread as one string id: `platform:workspace:channel:thread`, each part URI-encoded so ids
 * that contain `:` round-trip. Stable: the id is the key of everything Threadline stores for the thread.
 */
export function threadId(ref: ThreadRef): string {
  return [ref.platform, ref.workspace, ref.channel, ref.thread].map(encodeURIComponent).join(":");
}

/** Decodes {@link threadId}. @throws on a malformed id. */
export function parseThreadId(id: string): ThreadRef {
  const parts = id.split(":");
  if (parts.length !== 4) throw new Error(`Malformed thread id "${id}": expected 4 parts`);
  const [platform, workspace, channel, thread] = parts.map(decodeURIComponent) as [
    string,
    string,
    string,
    string,
  ];
  if (!PLATFORMS.includes(platform as Platform))
    throw new Error(`Malformed thread id "${id}": unknown platform`);
  return { platform: platform as Platform, workspace, channel, thread };
}
