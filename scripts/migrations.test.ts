import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// Released migrations are history: a fresh database must be built by the same SQL every time. Each
// migration holds its own SQL text (no function of a live package builds it), and its file's checksum is
// listed in migration-checksums.json: a released migration that changes fails here. A change to the schema
// is a new migration, added to the list once committed.
const root = join(import.meta.dirname, "..");
const listed = JSON.parse(
  readFileSync(join(import.meta.dirname, "migration-checksums.json"), "utf8"),
) as Record<string, string>;

function migrationFiles(): string[] {
  return readdirSync(join(root, "services")).flatMap((service) => {
    const dir = join("services", service, "src", "db", "migrations");
    let files: string[];
    try {
      files = readdirSync(join(root, dir));
    } catch {
      return [];
    }
    return files.filter((f) => /^Migration\d{14}_\w+\.ts$/.test(f)).map((f) => join(dir, f));
  });
}

const checksumOf = (file: string) =>
  createHash("sha256")
    .update(readFileSync(join(root, file)))
    .digest("hex");

describe("released migrations", () => {
  it("keep their text: each file's checksum is the one listed", () => {
    const changed = Object.entries(listed)
      .filter(([file, sum]) => checksumOf(file) !== sum)
      .map(([file]) => `${file}: released, so write a new migration instead of editing it`);
    expect(changed).toEqual([]);
  });

  it("are all listed (a new one: add the line given)", () => {
    const missing = migrationFiles()
      .filter((file) => !(file in listed))
      .map((file) => `"${file}": "${checksumOf(file)}"`);
    expect(missing).toEqual([]);
  });

  it("build their SQL from their own text, not from live functions of a package", () => {
    const live = migrationFiles().filter((file) =>
      /from "@fundraise\//.test(readFileSync(join(root, file), "utf8")),
    );
    expect(live).toEqual([]);
  });
});
