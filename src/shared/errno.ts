/** A Node system error's errno code (`ENOENT`, `EEXIST`…), if the thrown value has one. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** The errno code for a message: safe to show, unlike Node's message, which names host paths. */
export function errnoText(error: unknown): string {
  return errnoCode(error) ?? "unknown error";
}
