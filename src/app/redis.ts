import { Redis, type RedisOptions } from "ioredis";

/**
 * Reconnect at once, then back off to one attempt a second: a Redis restart or failover of a few seconds
 * costs a short wait, never a failed command.
 */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(100 * attempt, 1000);
}

/**
 * Reconnect attempts a queued command waits through before it fails: with {@link reconnectDelayMs}, about
 * 15 s of outage. Callers that must not give up (the gateway's intake) retry on top of it.
 */
export const COMMAND_RECONNECT_ATTEMPTS = 20;

const RIDE_OUT: RedisOptions = {
  retryStrategy: reconnectDelayMs,
  // Commands sent while disconnected wait in the offline queue and are sent, in order, on reconnect.
  enableOfflineQueue: true,
  // After a failover the old primary answers READONLY: reconnect (and resend) so writes reach the new one.
  reconnectOnError: (err) => (err.message.startsWith("READONLY") ? 2 : false),
};

/**
 * Ordinary commands. A command sent while Redis is unreachable waits (offline queue) and fails only after
 * about 15 s of reconnect attempts ({@link COMMAND_RECONNECT_ATTEMPTS}), so a restart is ridden out.
 */
export function commandConnection(url: string): Redis {
  return new Redis(url, { ...RIDE_OUT, maxRetriesPerRequest: COMMAND_RECONNECT_ATTEMPTS });
}

/**
 * BullMQ's connections (BullMQ requires `maxRetriesPerRequest: null`: its commands wait for Redis however
 * long it is away), reconnecting as {@link commandConnection} does.
 */
export function blockingConnection(url: string): Redis {
  return new Redis(url, { ...RIDE_OUT, maxRetriesPerRequest: null });
}
