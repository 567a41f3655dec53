import { UsageError } from "../../session/usage-error.js";
import { longFlags } from "../args.js";
import { EXIT } from "../exit-codes.js";
import type { Command, CommandTable } from "../main.js";

const HELP = `Usage: harness completion bash|zsh|fish

Print a shell completion script for harness: command names, then each command's flags.
Install it once:
  bash  echo 'source <(harness completion bash)' >> ~/.bashrc
  zsh   harness completion zsh > "\${fpath[1]}/_harness"   (or: source <(harness completion zsh))
  fish  harness completion fish > ~/.config/fish/completions/harness.fish`;

/** Flags every command takes (main.ts takes them out before the command parses its own). */
const GLOBAL_FLAGS = ["--help", "--no-color", "--quiet"];

interface Entry {
  name: string;
  summary: string;
  flags: string[];
}

/**
 * The scripts are generated from the command table and each command's flags: its parseArgs table
 * where it declares one, and every `--flag` its help names (commands with subcommands parse
 * per subcommand, and their help lists them all).
 */
async function entries(table: CommandTable): Promise<Entry[]> {
  return Promise.all(
    Object.entries(table).map(async ([name, { summary, load }]) => {
      const command: Command = await load();
      const named = command.help.match(/--[a-z][a-z0-9-]*/g) ?? [];
      const declared = command.options ? longFlags(command.options) : [];
      const flags = [...new Set([...declared, ...named, ...GLOBAL_FLAGS])].sort();
      return { name, summary, flags };
    }),
  );
}

function bash(list: readonly Entry[]): string {
  const cases = list.map((e) => `    ${e.name}) flags="${e.flags.join(" ")}" ;;`).join("\n");
  return `# harness completion for bash: source <(harness completion bash)
_harness() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${list.map((e) => e.name).join(" ")}" -- "$cur") )
    return 0
  fi
  local flags=""
  case "\${COMP_WORDS[1]}" in
${cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=( $(compgen -W "$flags" -- "$cur") )
  fi
  return 0
}
complete -o default -o bashdefault -F _harness harness
`;
}

/** A zsh single-quoted word. */
const zshQuote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

function zsh(list: readonly Entry[]): string {
  const described = list.map((e) => `    ${zshQuote(`${e.name}:${e.summary}`)}`).join("\n");
  const cases = list.map((e) => `    ${e.name}) flags=(${e.flags.join(" ")}) ;;`).join("\n");
  return `#compdef harness
# harness completion for zsh: put in a directory on $fpath as _harness, or: source <(harness completion zsh)
_harness() {
  local -a commands flags
  commands=(
${described}
  )
  if (( CURRENT == 2 )); then
    _describe 'harness command' commands
    return
  fi
  case $words[2] in
${cases}
  esac
  if [[ $PREFIX == -* ]]; then
    compadd -- $flags
  else
    _files
  fi
}
if [ "$funcstack[1]" = "_harness" ]; then
  _harness "$@"
else
  compdef _harness harness
fi
`;
}

/** A fish single-quoted word. */
const fishQuote = (text: string) => `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

function fish(list: readonly Entry[]): string {
  const lines = [
    "# harness completion for fish: harness completion fish > ~/.config/fish/completions/harness.fish",
  ];
  for (const e of list) {
    lines.push(`complete -c harness -f -n __fish_use_subcommand -a ${e.name} -d ${fishQuote(e.summary)}`);
  }
  for (const e of list) {
    for (const flag of e.flags) {
      lines.push(`complete -c harness -n '__fish_seen_subcommand_from ${e.name}' -l ${flag.slice(2)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

const SHELLS = { bash, zsh, fish } as const;

export function completionCommand(table: CommandTable): Command {
  return {
    help: HELP,
    async run(args) {
      const [shell, ...extra] = args;
      if (shell === undefined || extra.length > 0 || !Object.hasOwn(SHELLS, shell)) {
        throw new UsageError(
          `which shell? harness completion bash|zsh|fish${shell === undefined ? "" : ` (got "${args.join(" ")}")`}`,
        );
      }
      process.stdout.write(SHELLS[shell as keyof typeof SHELLS](await entries(table)));
      return EXIT.ok;
    },
  };
}
