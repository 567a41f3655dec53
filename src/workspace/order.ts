/**
 * Stable order for paths and names: by UTF-16 code unit, independent of locale, so results are
 * byte-for-byte the same on every machine (and so the model's context prefix stays stable).
 */
export function compareCodeUnits(a: string, b: string): number {
  if (a === b) return 0;
  return a < b ? -1 : 1;
}
