/**
 * A config file that cannot be used. The run must not start. `file` is a display label
 * (home shown as ~), never a secret; `problem` says what to fix.
 */
export class ConfigError extends Error {
  readonly code = "CONFIG_INVALID";
  readonly file: string;
  readonly problem: string;
  constructor(file: string, problem: string) {
    super(`${file}: ${problem}`);
    this.name = "ConfigError";
    this.file = file;
    this.problem = problem;
  }
}
