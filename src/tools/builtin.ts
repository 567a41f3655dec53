import { createBatchTool } from "./batch/tool.js";
import { createEditFileTool } from "./files/edit-file.js";
import { createGlobTool } from "./files/glob.js";
import { createGrepTool } from "./files/grep.js";
import { createReadArtifactTool } from "./files/read-artifact.js";
import { createReadFileTool } from "./files/read-file.js";
import { createWriteFileTool } from "./files/write-file.js";
import type { AnyTool } from "./tool.js";
import { createWebFetchTool, type WebFetchOptions } from "./web/web-fetch.js";

export { createBatchTool } from "./batch/tool.js";
export { createEditFileTool } from "./files/edit-file.js";
export { createGlobTool } from "./files/glob.js";
export { createGrepTool } from "./files/grep.js";
export { createReadArtifactTool } from "./files/read-artifact.js";
export { createReadFileTool } from "./files/read-file.js";
export { createWriteFileTool } from "./files/write-file.js";
export { createWebFetchTool } from "./web/web-fetch.js";

/**
 * The built-in file tools in their fixed order. The order and the descriptions are part of the
 * model's stable context prefix (tools + system prompt), so neither may change between turns.
 */
export function createFileTools(): AnyTool[] {
  return [
    createReadFileTool(),
    createWriteFileTool(),
    createEditFileTool(),
    createGlobTool(),
    createGrepTool(),
    createReadArtifactTool(),
  ];
}

/** The built-ins a session may be offered beyond the file tools and the shell: `batch`, `web_fetch`. */
export function createProgramTools(web: WebFetchOptions = {}): AnyTool[] {
  return [createBatchTool(), createWebFetchTool(web)];
}
