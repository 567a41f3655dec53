import { open } from "node:fs/promises";
import type { InputImage } from "../../engine/options.js";
import { ToolError } from "../../tools/errors.js";
import { IMAGE_MAX_BYTES, imageFacts, tooLarge } from "../../tools/files/image.js";
import { UsageError } from "../usage-error.js";

/**
 * An image the person attaches to a turn (`run --image FILE`, the chat's `/image PATH` or a
 * pasted path): read from the host (it is the person's own file, not the agent's), checked by
 * its header against the same limits as read_file's images, refused with the limit named.
 */
export async function readInputImage(path: string): Promise<InputImage> {
  let bytes: Buffer;
  try {
    const handle = await open(path, "r");
    try {
      const { size } = await handle.stat();
      if (size > IMAGE_MAX_BYTES) throw tooLarge(path, size);
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof ToolError) throw new UsageError(`image ${error.message}`);
    throw new UsageError(
      `image ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? "I/O error"})`,
    );
  }
  try {
    return { bytes, ...imageFacts(bytes, path) };
  } catch (error) {
    if (error instanceof ToolError) throw new UsageError(`image ${error.message}`);
    throw error;
  }
}
