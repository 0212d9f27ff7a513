/**
 * The executor's tools over MCP: the tools file (config.ts) and the host
 * that runs its servers and serves them to the tool loop (host.ts).
 */
export { loadToolsFile, parseToolsConfig, isCapabilityName } from './config.js'
export type { HttpServerConfig, ServerConfig, StdioServerConfig, ToolsConfig } from './config.js'
export { startToolHost } from './host.js'
export type { ToolHost, ToolHostOptions, ToolServerState } from './host.js'
export { MAX_KEPT_RESULT_BYTES } from './content.js'
