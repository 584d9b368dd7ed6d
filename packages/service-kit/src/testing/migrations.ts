import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Every unique index the migrations in `dir` create, by name (a service's 409s must name each). */
export const uniqueIndexesOf = (dir: string): string[] =>
  readdirSync(dir)
    .filter((file) => file.startsWith("Migration"))
    .flatMap((file) => [...readFileSync(join(dir, file), "utf8").matchAll(/create unique index "(\w+)"/g)])
    .map((match) => match[1] as string);
