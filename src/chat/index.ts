/**
 * Threadline's platform-neutral chat port: thread references, the inbound/outbound types every platform
 * adapter implements, and the rendering of runs (streamed replies, progress lines, approval-card text,
 * the Markdown dialect, message splitting). Platform dialects live in their adapters.
 */

export { type AccessInput, allowed, type ChatAccess, normalizeAccess } from "./access.js";
export { AckGate, type AckGateOptions, DEFAULT_ACK_HOLD_MS } from "./ack-gate.js";
export {
  type ApprovalButtonAction,
  type ApprovalFormKind,
  type ApprovalIdCodec,
  approvalButtonId,
  approvalIdCodec,
  parseApprovalButtonId,
} from "./approval-button-id.js";
export { APPROVAL_DECISIONS, isApprovalDecision } from "./approval-decision.js";
export { argumentChanges, argumentsJson } from "./approval-edit.js";
export { watchApprovals } from "./approval-watch.js";
export { DeliveryDedupe, type DeliveryDedupeOptions } from "./delivery-dedupe.js";
export { ExpiringMap } from "./expiring-map.js";
export { DEFAULT_HISTORY_LIMITS, type HistoryLimits, historyWindow } from "./history-limits.js";
export type * from "./inbound.js";
export { type ChatLogger, SILENT_LOGGER } from "./logger.js";
export * from "./reactions.js";
export {
  type ApprovalButtonLabels,
  alwaysScope,
  approvalButtonLabels,
  approvalCardText,
  offersThreadGrant,
  renderArguments,
  requesterOf,
} from "./render/approval-text.js";
export { type RenderClock, systemClock } from "./render/clock.js";
export { formatCost, formatCount, formatRunFooter } from "./render/footer.js";
export { MARKDOWN_DIALECT } from "./render/markdown-dialect.js";
export { type MarkdownLine, scanMarkdownLines } from "./render/markdown-lines.js";
export { formatFailureLine, formatOutcomeLine, NOTICE_CHARS } from "./render/outcome.js";
export {
  escapeMarkdown,
  formatDuration,
  formatToolLine,
  shortText,
  TASK_TEXT_CHARS,
  TOOL_DETAILS_CHARS,
  TOOL_ERROR_CHARS,
  type ToolProgress,
  toolTask,
} from "./render/progress.js";
export type { RenderOperation } from "./render/reply-messages.js";
export {
  approvalStatus,
  createRunRenderer,
  cutOffNotice,
  DEFAULT_REPLY_MAX_CHARS,
  DEFAULT_REPLY_MAX_MESSAGES,
  EMPTY_REPLY_MARKDOWN,
  type RunRenderer,
  type RunRendererOptions,
  runningStatus,
  THINKING_STATUS,
} from "./render/run-renderer.js";
export { MIN_SPLIT_CHARS, pieceText, planSplit, type SplitPiece, splitMessage } from "./render/split.js";
export * from "./thread-ref.js";
export { ThreadSerial, type ThreadSerialOptions } from "./thread-serial.js";
export type * from "./types.js";
export { CHAT_OUTBOUND_METHODS } from "./types.js";
