import { CodedError } from "../shared/coded-error.js";

/**
 * A config file that cannot be used. The run must not start. `file` is a display label
 * (home shown as ~), never a secret; `problem` says what to fix.
 */
export class ConfigError extends CodedError<"CONFIG_INVALID"> {
  override readonly name = "ConfigError";
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super("CONFIG_INVALID", `${file}: ${problem}`);
  }
}
