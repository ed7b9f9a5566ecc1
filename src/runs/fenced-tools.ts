import { ABORTED_TOOL_TEXT } from "../agent/index.js";
import type { Lease } from "./lease.js";
import { INTERRUPTED_TOOL_TEXT } from "./recovery.js";
import type { RunTool } from "./setup.js";
import type { TranscriptSink } from "./transcript-sink.js";

/**
 * A run's tools, fenced: each call records "executing" (fenced by the lease) right before `execute`, so a
 * claim that lost the thread starts no tool and a call an earlier claim had started is never run again — it
 * answers as interrupted. Each tool keeps its fields and prototype.
 */
export function fenceTools(
  tools: readonly RunTool[],
  sink: () => TranscriptSink,
  lease: () => Lease,
): RunTool[] {
  return tools.map((tool) => {
    const fenced: RunTool = Object.assign(
      Object.create(Object.getPrototypeOf(tool) as object) as RunTool,
      tool,
    );
    fenced.execute = async (toolCallId, params, signal, onUpdate) => {
      if (!(await sink().beginCall(toolCallId, tool.name))) {
        if (lease().lost) throw new Error("This run no longer owns its thread; the tool was not started.");
        throw new Error(INTERRUPTED_TOOL_TEXT);
      }
      // An abort (a stop, an interrupt) during that round trip: the tool must not start with a signal that
      // will never fire its "abort" event again.
      if (signal?.aborted) throw new Error(ABORTED_TOOL_TEXT);
      return tool.execute.call(tool, toolCallId, params, signal, onUpdate);
    };
    return fenced;
  });
}
