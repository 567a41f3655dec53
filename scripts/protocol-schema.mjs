// `npm run build && npm run protocol:schema`: writes schema/protocol.schema.json from the built protocol schemas
// (dist/src/api), the committed JSON Schema of the server protocol. test/api/json-schema.test.ts
// fails until the committed file matches the code, and checks it stays compatible with
// schema/protocol.v1.json, the first published version (never regenerated).
import { mkdirSync, writeFileSync } from "node:fs";
import { protocolJsonSchemaText } from "../dist/src/api/json-schema.js";

mkdirSync("schema", { recursive: true });
writeFileSync("schema/protocol.schema.json", protocolJsonSchemaText());
process.stdout.write("wrote schema/protocol.schema.json\n");
