/** Bad command-line input: exit 64 with a message that says what to do. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
