import { type RetryOptions, WebClient, type WebClientOptions } from "@slack/web-api";
import type { AckGate } from "../chat/index.js";
import { boltLogger } from "./bolt-logger.js";
import { DEFAULT_SLACK_API_URL, SILENT_SLACK_LOGGER, type SlackLogger } from "./options.js";
import { type SlackRateLimiter, UNLIMITED } from "./rate-limit.js";

/** A failed Slack Web API call, with the context needed to act on it in logs. */
export class SlackApiError extends Error {
  constructor(
    /** The Web API method, e.g. `chat.update`. */
    readonly method: string,
    /** Slack's error code (`channel_not_found`, `ratelimited`, …) or `request_failed` for transport errors. */
    readonly code: string,
    /** Workspace (team) id. */
    readonly team: string,
    /** Channel id, when the call had one. */
    readonly channel: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(`Slack ${method} failed in ${team}${channel ? `/${channel}` : ""}: ${code}`, options);
    this.name = "SlackApiError";
  }
}

/**
 * Retries for every call: transport errors and 429s (after the `Retry-After` Slack sends) are retried up
 * to 6 times, so a rate-limited final edit still arrives.
 */
export const SLACK_RETRY: RetryOptions = { retries: 6, factor: 1.6, minTimeout: 200, maxTimeout: 5_000 };

/** Options of {@link createSlackClient}. */
export interface SlackClientOptions {
  /** Bot token (`xoxb-…`). */
  token: string;
  /** Web API base URL. Default `https://slack.com/api/`. */
  apiUrl?: string;
  /** Overrides {@link SLACK_RETRY} (tests shorten it). */
  retry?: RetryOptions;
  /** Where the client's own warnings (retries, rate limits) go. Default: nowhere. */
  log?: SlackLogger;
  /**
   * The HTTP `fetch` of the Web API calls, e.g. the shared keep-alive one (`createHttpFetch`,
   * `src/http/fetch.ts`). Default: Node's global `fetch`.
   */
  fetch?: WebClientOptions["fetch"];
}

/** The WebClient options every Slack client of the product uses (bolt's included), honouring `apiUrl`. */
export function slackClientOptions(options: Omit<SlackClientOptions, "token">): WebClientOptions {
  const clientOptions: WebClientOptions = {
    slackApiUrl: normalizeApiUrl(options.apiUrl ?? DEFAULT_SLACK_API_URL),
    retryConfig: options.retry ?? SLACK_RETRY,
    logger: boltLogger(options.log ?? SILENT_SLACK_LOGGER),
  };
  if (options.fetch !== undefined) clientOptions.fetch = options.fetch;
  return clientOptions;
}

/** A bot-token WebClient pointed at `apiUrl`. */
export function createSlackClient(options: SlackClientOptions): WebClient {
  return new WebClient(options.token, slackClientOptions(options));
}

/** `https://host/api` → `https://host/api/` (WebClient appends method names). */
export function normalizeApiUrl(url: string): string {
  return url.endsWith("/") ? url : `${url}/`;
}

/** Slack's error codes that mean "this workspace (or token) cannot use the method at all". */
export const UNSUPPORTED_METHOD_CODES: ReadonlySet<string> = new Set([
  "unknown_method",
  "not_allowed",
  "not_allowed_token_type",
  "missing_scope",
  "method_deprecated",
  "feature_not_enabled",
  "team_not_allowed",
]);

/** The calls that acknowledge (👀 and the other reaction marks), tracked in {@link SlackApi}'s gate. */
const ACKNOWLEDGING_METHODS: ReadonlySet<string> = new Set(["reactions.add"]);

/**
 * Two event-loop turns: a request handed to the Web API client once its budget is granted is written by
 * then (the client reaches `fetch` in microtasks; a new keep-alive connection is opened in the next turn).
 */
function twoTurns(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/** What a call is about, for budgets and errors. */
export interface CallScope {
  team: string;
  channel?: string;
}

/** A Web API call result (Slack's JSON). */
export type SlackResult = Record<string, unknown>;

/**
 * Web API calls through the shared method budgets. `call` waits for budget, then calls; every failure
 * becomes a {@link SlackApiError}. `tryCall` returns `undefined` when a best-effort budget is used up.
 */
export class SlackApi {
  constructor(
    readonly client: WebClient,
    private readonly limiter: SlackRateLimiter = UNLIMITED,
    /**
     * The gateway's acknowledgements on their way: each reaction is tracked there from its budget check
     * until its request is written ({@link AckGate}). Default: none tracked.
     */
    private readonly acks?: AckGate,
  ) {}

  async call(method: string, scope: CallScope, args: Record<string, unknown>): Promise<SlackResult> {
    const granted = this.limiter.acquire(method, scope.team, scope.channel);
    if (this.acks && ACKNOWLEDGING_METHODS.has(method)) this.acks.track(granted.then(twoTurns));
    await granted;
    return this.send(method, scope, args);
  }

  async tryCall(
    method: string,
    scope: CallScope,
    args: Record<string, unknown>,
  ): Promise<SlackResult | undefined> {
    if (!(await this.limiter.acquire(method, scope.team, scope.channel))) return undefined;
    return this.send(method, scope, args);
  }

  /**
   * Waits for budget, then calls with the arguments `args` builds at that moment, so a call that queued
   * sends what is wanted when it goes out. `args` returning `undefined` sends nothing (the budget's slot
   * is spent). Resolves `undefined` without calling `args` when a best-effort budget is used up.
   */
  async callWhenGranted(
    method: string,
    scope: CallScope,
    args: () => Promise<Record<string, unknown> | undefined>,
  ): Promise<SlackResult | undefined> {
    if (!(await this.limiter.acquire(method, scope.team, scope.channel))) return undefined;
    const built = await args();
    return built === undefined ? undefined : this.send(method, scope, built);
  }

  private async send(method: string, scope: CallScope, args: Record<string, unknown>): Promise<SlackResult> {
    try {
      return (await this.client.apiCall(method, args)) as unknown as SlackResult;
    } catch (err) {
      throw new SlackApiError(method, errorCode(err), scope.team, scope.channel, { cause: err });
    }
  }
}

/** Slack's error code of a WebClient error (`data.error`), else `request_failed`. */
export function errorCode(err: unknown): string {
  if (err instanceof SlackApiError) return err.code;
  const data = (err as { data?: { error?: unknown } } | undefined)?.data;
  return typeof data?.error === "string" ? data.error : "request_failed";
}
