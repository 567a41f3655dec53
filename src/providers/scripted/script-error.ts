/** A script file or module that cannot be used (its own module: the CLI tells it apart without loading the scripted model). */
export class ScriptError extends Error {
  override readonly name = "ScriptError";
}
