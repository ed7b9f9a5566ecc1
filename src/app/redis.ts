import { Redis } from "ioredis";

/** Ordinary commands: fail a command after a few reconnect attempts instead of queueing forever. */
export function commandConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3 });
}

/** BullMQ's blocking connection (BullMQ requires `maxRetriesPerRequest: null`). */
export function blockingConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}
