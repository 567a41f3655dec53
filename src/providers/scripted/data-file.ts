import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { basename } from "node:path";
import { errnoCode } from "../../shared/errno.js";
import { openedPath } from "../../workspace/opened-path.js";
import { ScriptError } from "./script.js";

/** Larger than any reply list a test writes; a bigger file is refused, never read into memory. */
export const SCRIPT_DATA_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * The bytes of a script that is data only (a client without host rights named it): opened once,
 * without following a link in its last component and without blocking (a FIFO cannot hang the
 * server), the descriptor's real path compared with the one that was checked (a directory on
 * the way swapped for a link since cannot redirect the read), a regular file of bounded size.
 * What is returned is only ever parsed as JSON.
 */
export async function readScriptData(checkedPath: string): Promise<Buffer> {
  const name = basename(checkedPath);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(checkedPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ELOOP") throw new ScriptError(`script ${name} became a symbolic link; it was not read`);
    throw new ScriptError(`cannot read script ${name} (${code ?? "error"})`);
  }
  try {
    const opened = openedPath(handle.fd);
    if (opened !== undefined && opened !== checkedPath)
      throw new ScriptError(`script ${name} moved after it was checked; it was not read`);
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ScriptError(`script ${name} is not a regular file`);
    if (stats.size > SCRIPT_DATA_LIMIT_BYTES)
      throw new ScriptError(`script ${name} is over ${SCRIPT_DATA_LIMIT_BYTES} bytes`);
    // The file may grow after the stat (a session's shell can write it): read one byte past the
    // bound, never the whole file.
    const buffer = Buffer.alloc(SCRIPT_DATA_LIMIT_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) break;
    }
    const bytes = buffer.subarray(0, length);
    if (bytes.length > SCRIPT_DATA_LIMIT_BYTES)
      throw new ScriptError(`script ${name} is over ${SCRIPT_DATA_LIMIT_BYTES} bytes`);
    return bytes;
  } catch (error) {
    if (error instanceof ScriptError) throw error;
    throw new ScriptError(`cannot read script ${name} (${errnoCode(error) ?? "error"})`);
  } finally {
    await handle.close();
  }
}
