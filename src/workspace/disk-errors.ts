import { errnoCode } from "../shared/errno.js";
import { quote } from "./boundary.js";
import { WorkspaceError, type WorkspaceErrorCode } from "./fs.js";

export function escapeError(input: string): WorkspaceError {
  return new WorkspaceError(
    "PATH_ESCAPE",
    input,
    `path escapes the workspace: ${quote(input)} resolves (through a symbolic link) to a location outside it`,
  );
}

const ERRNO_CODES: Record<string, WorkspaceErrorCode> = {
  ENOENT: "NOT_FOUND",
  EISDIR: "IS_DIRECTORY",
  ENOTDIR: "NOT_A_DIRECTORY",
  ENAMETOOLONG: "INVALID_PATH",
  EINVAL: "INVALID_PATH",
  ELOOP: "INVALID_PATH",
};

const ERRNO_MESSAGES: Partial<Record<WorkspaceErrorCode, string>> = {
  NOT_FOUND: "does not exist",
  IS_DIRECTORY: "is a directory",
  NOT_A_DIRECTORY: "has a parent that is not a directory",
  INVALID_PATH: "is not a usable path on this file system",
};

/**
 * Node errors carry absolute host paths in `message`; only the errno code survives, next to the
 * relative path the caller gave. WorkspaceErrors pass through unchanged.
 */
export function mapNodeError(error: unknown, p: string, action: string): WorkspaceError {
  if (error instanceof WorkspaceError) return error;
  const errno = errnoCode(error);
  const code = (errno !== undefined && ERRNO_CODES[errno]) || "IO_ERROR";
  const detail = ERRNO_MESSAGES[code];
  const message =
    detail !== undefined
      ? `${quote(p)} ${detail}`
      : `could not ${action} ${quote(p)} (${errno ?? "unknown error"})`;
  return new WorkspaceError(code, p, message);
}
