/** The status shown while the model works (from the first turn on, between tools). */
export const THINKING_STATUS = "is thinking…";

/** The status shown while tools run: `is running deploy_service…` (names in start order). */
export function runningStatus(toolNames: readonly string[]): string {
  const shown = toolNames.slice(0, 3).join(", ");
  return `is running ${shown}${toolNames.length > 3 ? ` and ${toolNames.length - 3} more` : ""}…`;
}

/** The status shown while an approval card waits: `is waiting for Alice's approval`. */
export function approvalStatus(requesterName: string): string {
  return `is waiting for ${requesterName}'s approval`;
}
