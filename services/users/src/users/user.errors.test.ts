import { join } from "node:path";
import { uniqueIndexesOf } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import { conflictOfConstraint } from "./user.errors.ts";

const MIGRATIONS = join(import.meta.dirname, "..", "db", "migrations");

describe("conflictOfConstraint", () => {
  it("names the 409 of every unique index a concurrent sign-up or update can hit (never 500)", () => {
    expect(uniqueIndexesOf(MIGRATIONS).sort()).toEqual([
      "user_address_unique",
      "user_mail_address_unique",
      "user_username_unique",
    ]);
    expect(conflictOfConstraint("user_address_unique")?.code).toBe("USER_ADDRESS_TAKEN");
    expect(conflictOfConstraint("user_mail_address_unique")?.code).toBe("USER_EMAIL_TAKEN");
    expect(conflictOfConstraint("user_username_unique")?.code).toBe("USER_USERNAME_TAKEN");
  });
});
