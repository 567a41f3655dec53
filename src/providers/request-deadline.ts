/**
 * How long one model request may take, whatever the server sends: ten minutes. Its own module so
 * profiles (config.ts, loaded by every run) name it without loading the adapters' error handling.
 */
export const DEFAULT_REQUEST_DEADLINE_MS = 600_000;
