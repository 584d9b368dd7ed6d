export { silentLogger } from "../logger.ts";
export { createTestDatabase, type TestDatabase } from "./database.ts";
