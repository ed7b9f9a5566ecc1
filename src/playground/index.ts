/**
 * The playground: a local web chat served by the bot itself — threads, a composer that mentions the bot,
 * live streaming, reactions and approval buttons — and Threadline's third chat platform. Its state lives
 * in Redis (so gateways and workers in separate processes share it) and reaches browsers over
 * Server-Sent Events.
 */
export {
  PLAYGROUND_CHANNEL,
  PLAYGROUND_WORKSPACE,
  PlaygroundActions,
  type PlaygroundActionsOptions,
  playgroundThread,
  threadTitle,
} from "./api.js";
export type { PlaygroundKeys, PlaygroundThreadKeys } from "./keys.js";
export { LiveUpdates } from "./live.js";
export { PLAYGROUND_BOT, PLAYGROUND_LIMITS, PlaygroundOutbound } from "./outbound.js";
export {
  createPlaygroundPlatform,
  type PlaygroundPlatform,
  type PlaygroundPlatformOptions,
} from "./platform.js";
export {
  createPlaygroundServer,
  type PlaygroundInfo,
  type PlaygroundLogger,
  type PlaygroundServerOptions,
} from "./server.js";
export {
  type ChangeGuard,
  type NewPlaygroundMessage,
  PlaygroundError,
  type PlaygroundErrorCode,
  PlaygroundStore,
  type PlaygroundStoreOptions,
} from "./store.js";
export type * from "./types.js";
