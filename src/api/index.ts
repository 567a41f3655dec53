/** The harness server protocol (version 1): schemas, envelopes, error codes and line framing. */
export * from "./common.js";
export * from "./compat.js";
export * from "./envelope.js";
export * from "./errors.js";
export * from "./framing.js";
export * from "./json-schema.js";
export * from "./methods.js";
export * from "./notifications.js";
