import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { conflictOfConstraint } from "./user.errors.ts";

const MIGRATIONS = join(import.meta.dirname, "..", "db", "migrations");

/** Every unique index the service's migrations create, by name. */
const uniqueIndexes = () =>
  readdirSync(MIGRATIONS)
    .filter((file) => file.startsWith("Migration"))
    .flatMap((file) => [
      ...readFileSync(join(MIGRATIONS, file), "utf8").matchAll(/create unique index "(\w+)"/g),
    ])
    .map((match) => match[1] as string);

describe("conflictOfConstraint", () => {
  it("names the 409 of every unique index a concurrent sign-up or update can hit (never 500)", () => {
    expect(uniqueIndexes().sort()).toEqual([
      "user_address_unique",
      "user_mail_address_unique",
      "user_username_unique",
    ]);
    expect(conflictOfConstraint("user_address_unique")?.code).toBe("USER_ADDRESS_TAKEN");
    expect(conflictOfConstraint("user_mail_address_unique")?.code).toBe("USER_EMAIL_TAKEN");
    expect(conflictOfConstraint("user_username_unique")?.code).toBe("USER_USERNAME_TAKEN");
  });
});
