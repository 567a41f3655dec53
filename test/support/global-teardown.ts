import { rmSync } from "node:fs";
import { dirname } from "node:path";

/** Removes the throwaway journal-key directory vitest.config.ts made for the whole test run. */
export default function setup(): () => void {
  return () => {
    const keyFile = process.env.HARNESS_KEY_FILE;
    if (keyFile?.includes("harness-test-key-")) rmSync(dirname(keyFile), { recursive: true, force: true });
  };
}
