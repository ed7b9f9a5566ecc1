/**
 * Tools for Threadline's agents: `defineTool` for your own, the built-in `fetch_url`, workspace file
 * tools and `shell`, and MCP servers' tools. Tools are definitions bound to each run (thread, requester,
 * workspace) with `forRun`, which yields an `AgentTool` with an approval policy.
 */
export {
  type ApprovalFunction,
  type ApprovalNeed,
  type ApprovalPolicy,
  type ApprovalTimeout,
  approvalNeedSchema,
  approvalPolicySchema,
  approvalPolicySchemaFor,
  approvalTimeoutSchema,
  type BoundApprovalPolicy,
  bindApprovalPolicy,
  type ToolApprovalContext,
  type ToolThread,
  type ToolUser,
} from "./approval-policy.js";
export {
  type AgentToolSpec,
  type AnyToolDefinition,
  type BoundTool,
  defineTool,
  describeToolFailure,
  isToolDefinition,
  TOOL_NAME_PATTERN,
  type ToolContext,
  type ToolDefinition,
  ToolDefinitionError,
  ToolError,
  type ToolOutput,
  type ToolRunScope,
  type ToolSpec,
  textResult,
  toolSpecProblems,
  toResult,
  toToolDefinition,
} from "./define-tool.js";
export {
  type FetchedBody,
  type FetchUrlOptions,
  type FetchUrlSettings,
  fetchGuarded,
  fetchUrlSettingsSchema,
  fetchUrlTool,
  readableText,
} from "./fetch-url.js";
export {
  editFileTool,
  type FileToolsOptions,
  fileTools,
  fileToolsSettingsSchema,
  listFilesTool,
  readFileTool,
  writeFileTool,
} from "./file-tools.js";
export { htmlToMarkdown, type ReadablePage } from "./html-to-markdown.js";
export {
  type ConnectMcpOptions,
  connectMcpServers,
  type McpFailure,
  type McpHttpServer,
  type McpServerCommon,
  type McpServerConfig,
  type McpStdioServer,
  type McpToolset,
  mcpContentToResult,
  mcpHttpServerSchema,
  mcpServerCommonSchema,
  mcpServerSchema,
  mcpStdioServerSchema,
  mcpToolName,
} from "./mcp.js";
export {
  McpConnection,
  type McpConnectionEvent,
  type McpReconnectOptions,
  mcpReconnectSettingsSchema,
} from "./mcp-connection.js";
export {
  type NetGuardOptions,
  netGuardSettingsSchema,
  nonPublicReason,
  type PinnedTarget,
  pinPublicTarget,
  type ResolvedAddress,
  type Resolver,
  systemResolver,
} from "./net-guard.js";
export {
  type BwrapSandbox,
  type BwrapSandboxOptions,
  bwrapArgs,
  bwrapSandboxSettingsSchema,
  findExecutable,
  probeBwrap,
  SANDBOX_PATH,
  type SandboxProbe,
  type ShellSandboxMode,
  shellSandboxModeSchema,
} from "./sandbox.js";
export {
  flagSetting,
  numberSetting,
  offOrCountSetting,
  oneOfSetting,
  textListSetting,
  textRecordSetting,
  textSetting,
  wholeNumberSetting,
} from "./setting-schemas.js";
export {
  type CommandResult,
  type RunCommandOptions,
  runShellCommand,
  type ShellOptions,
  scrubbedEnv,
  shellSettingsSchema,
  shellTool,
} from "./shell.js";
export {
  type BuiltinToolsOptions,
  bindTools,
  builtinTools,
  builtinToolsSchema,
  duplicateToolNames,
  withApprovalPolicies,
} from "./toolbox.js";
export {
  ensureWorkspace,
  openForReading,
  replaceInWorkspace,
  resolveInWorkspace,
  type WorkspacePath,
  workspaceDirFor,
} from "./workspace.js";
