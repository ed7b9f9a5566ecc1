import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import {
  ABORTED_MESSAGE,
  describeHttpFailure,
  describeProviderFailure,
  describeStreamErrorEvent,
  displayBaseURL,
  type FailureContext,
  formatLimit,
  type HttpFailureInfo,
  type ProviderFailure,
  unreachable,
} from "../provider-errors.js";

function infoOf(err: APIError): HttpFailureInfo {
  return { status: err.status, body: err.error, message: err.message, headers: err.headers };
}

/**
 * Turns anything thrown while calling the model through the `openai` SDK into a {@link ProviderFailure}
 * with a short human sentence: the SDK's abort, timeout, connection and HTTP error classes first (HTTP
 * errors worded by status), then {@link describeProviderFailure} for the rest. Never throws.
 */
export function describeOpenAIFailure(err: unknown, ctx: FailureContext): ProviderFailure {
  if (err instanceof APIUserAbortError) return { kind: "aborted", message: ABORTED_MESSAGE };
  const where = displayBaseURL(ctx.baseURL);
  if (err instanceof APIConnectionTimeoutError) {
    const limit = ctx.timeoutMs ? ` within ${formatLimit(ctx.timeoutMs)}` : "";
    return { kind: "timeout", message: `The model server at ${where} did not answer${limit} (timeout).` };
  }
  if (err instanceof APIConnectionError) return unreachable(err, where, ctx);
  if (err instanceof APIError) {
    const info = infoOf(err);
    if (typeof info.status === "number") {
      return describeHttpFailure(info as HttpFailureInfo & { status: number }, ctx);
    }
    return describeStreamErrorEvent(info, ctx);
  }
  return describeProviderFailure(err, ctx);
}

/** The HTTP status of an SDK error, if the server answered. */
export function openAIErrorStatus(err: unknown): number | undefined {
  return err instanceof APIError ? err.status : undefined;
}
