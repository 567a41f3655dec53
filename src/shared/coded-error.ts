/**
 * The base of harness's own errors that carry a stable code. Callers recognise an error with
 * `instanceof` its class and branch on `code`; never on `name` or on the message text, which
 * are for people. Each subclass names itself (`override readonly name = "…"`) so that messages
 * and journaled failure names stay readable even when a bundler renames classes.
 */
export class CodedError<Code extends string = string> extends Error {
  readonly code: Code;
  constructor(code: Code, message: string) {
    super(message);
    this.code = code;
  }
}
