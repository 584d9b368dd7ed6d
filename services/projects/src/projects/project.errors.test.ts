import { join } from "node:path";
import { uniqueIndexesOf } from "@fundraise/service-kit/testing";
import { describe, expect, it } from "vitest";
import { conflictOfConstraint } from "./project.errors.ts";

const MIGRATIONS = join(import.meta.dirname, "..", "db", "migrations");
/** Unique indexes written only by `on conflict ... do update`: a second write replaces, never refused. */
const UPSERTED = ["rating_project_user_unique"];

describe("conflictOfConstraint", () => {
  it("names a 409 for every unique index a concurrent write can hit (rules.md §8.12: never 500)", () => {
    const indexes = uniqueIndexesOf(MIGRATIONS);
    expect(indexes).toEqual(expect.arrayContaining(["project_name_unique", "permission_one_owner"]));
    for (const index of indexes.filter((name) => !UPSERTED.includes(name))) {
      expect(conflictOfConstraint(index), index).toMatchObject({ code: expect.any(String) });
    }
    expect(conflictOfConstraint("project_name_unique")?.code).toBe("PROJECT_NAME_TAKEN");
    expect(conflictOfConstraint("project_file_hash_unique")?.code).toBe("PROJECT_FILE_TAKEN");
    expect(conflictOfConstraint("permission_project_user_unique")?.code).toBe("INVITATION_EXISTS");
    expect(conflictOfConstraint("permission_one_owner")?.code).toBe("MEMBERSHIP_OWNER");
    expect(conflictOfConstraint(undefined)).toBeUndefined();
  });
});
