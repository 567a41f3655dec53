import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { UsageError } from "../session/usage-error.js";

/**
 * Change the user config as JSON, keeping every other key: the file is read, changed, written to a
 * temporary file beside it and renamed over it, so a crash leaves the old file or the new one,
 * never half of either. A file that is not a JSON object is refused, unchanged.
 */
export async function updateUserConfig(
  file: string,
  change: (config: Record<string, unknown>) => void,
): Promise<void> {
  let text: string | undefined;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  let value: unknown = {};
  if (text !== undefined && text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${file} is not valid JSON (${(error as Error).message}); fix it first`);
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new UsageError(`${file} must hold a JSON object; fix it first`);
  const config = value as Record<string, unknown>;
  change(config);
  const mode = await stat(file).then(
    (s) => s.mode & 0o777,
    () => 0o600,
  );
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temp = join(dirname(file), `.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(temp, `${JSON.stringify(config, null, 2)}\n`, { mode, flag: "wx", flush: true });
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
