import { config } from "zod";

// Zod compiles a specialised parser (`new Function`) the first time each object schema parses.
// That pays off over many parses in a long-lived process; a CLI process parses most schemas a
// handful of times, so compiling costs more than it saves (about 10 ms of every run, measured).
// It must run before any schema is built, hence this module is the CLI entry's first import.
config({ jitless: true });
