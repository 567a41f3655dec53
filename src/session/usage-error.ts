/** Bad command-line input: exit 64 with a message that says what to do. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
