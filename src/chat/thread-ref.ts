import type { ThreadRef } from "./types.js";

/** A platform name as adapters choose it (see {@link ThreadRef.platform}). */
const PLATFORM_NAME = /^[a-z][a-z0-9-]*$/;

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
  if (!PLATFORM_NAME.test(platform)) throw new Error(`Malformed thread id "${id}": bad platform name`);
  return { platform, workspace, channel, thread };
}
