import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import type { Tool } from "../../agent/index.js";
import { toolParametersSchema } from "../tool-schema.js";

/** Converts tools to chat-completions function tools. Throws only if a schema cannot be converted at all. */
export function toolsToOpenAI(tools: readonly Tool[]): ChatCompletionFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      description: tool.description,
      parameters: toolParametersSchema(tool.parameters),
    },
  }));
}
