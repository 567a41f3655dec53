import { runWorkspaceFsContract } from "./contract.js";
import { FACTORIES } from "./fixtures.js";

for (const [name, factory] of FACTORIES) runWorkspaceFsContract(name, factory);
