export * from "./config.ts";
export * from "./db-errors.ts";
export * from "./logger.ts";
export * from "./orm.ts";
export * from "./shutdown.ts";
