/** Bounds of the context a mention inside an existing thread brings along, on every platform. */
export interface HistoryLimits {
  /** Most recent earlier messages kept. Default 30 (Discord lists at most 100 per call). */
  maxMessages: number;
  /** Characters of earlier text kept (oldest messages dropped first). Default 8,000. */
  maxChars: number;
}

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = { maxMessages: 30, maxChars: 8000 };

/**
 * Keeps the newest texts of a thread within `limits`: offer texts newest first; `admit` says whether the
 * text still fits (and counts it), and once one does not, nothing older does either (the history stays
 * contiguous). Pure state; never throws.
 */
export function historyWindow(limits: HistoryLimits): { admit(text: string): boolean } {
  let messages = 0;
  let chars = 0;
  let full = false;
  return {
    admit(text) {
      if (full || messages >= limits.maxMessages || chars + text.length > limits.maxChars) {
        full = true;
        return false;
      }
      messages++;
      chars += text.length;
      return true;
    },
  };
}
