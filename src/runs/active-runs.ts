/**
 * The runs one worker process is executing now: from the moment a run claimed its thread until its job
 * handler returns. Written by the run processor; everyone else only reads it (metrics sample it).
 */
export class ActiveRuns {
  private readonly runs = new Set<{ threadId: string }>();

  /** Records a run of `threadId` as executing; the returned function ends the record (idempotent). */
  enter(threadId: string): () => void {
    const entry = { threadId };
    this.runs.add(entry);
    return () => {
      this.runs.delete(entry);
    };
  }

  /**
   * The thread ids of the runs executing now, one per run, oldest first. A thread appears twice only in
   * the instant a run that lost its lease is still winding down next to its successor.
   */
  threadIds(): string[] {
    return [...this.runs].map((entry) => entry.threadId);
  }
}
