import type { Usage } from "../protocol/types.js";

/** Record a token count reported by a provider; anything but a non-negative integer is left out. */
export function setUsageCount(target: Usage, key: keyof Usage, value: number | null | undefined): void {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) target[key] = value;
}
