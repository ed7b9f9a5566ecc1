/**
 * The HTTP client every outbound SDK shares: one `fetch` over an undici keep-alive `Agent`, used by the
 * model providers' clients (`src/llm`) and Slack's `WebClient` (wired in `src/app`). It depends on no other
 * folder. Re-exported by `threadline/llm` for package users.
 */

export { createHttpFetch, type FetchFunction, type HttpFetch, type HttpFetchOptions } from "./fetch.js";
