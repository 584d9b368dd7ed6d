import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

// A clone alone must say what the platform does: every link in the repository's Markdown stays inside the
// repository and names a file (or folder) that exists, and a `#fragment` into a Markdown file names one of
// its headings. No server, no network: the files only.
const root = resolve(import.meta.dirname, "..");
const SKIPPED = new Set(["node_modules", ".git", "dist", "artifacts", "coverage", ".local"]);

function filesEndingIn(suffix: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIPPED.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesEndingIn(suffix, path);
    return entry.name.endsWith(suffix) ? [path] : [];
  });
}

/** The text without fenced code blocks, where nothing is a heading or a link. */
const withoutFences = (text: string) => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");

/** The text without fenced code blocks and code spans, where brackets are not links. */
const prose = (text: string) => withoutFences(text).replace(/(`+)[^`\n]*?\1/g, "");

/** Inline links and images `[text](target "title")`, and reference definitions `[label]: target`. */
function linkTargets(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(
    (m) => m[1]!,
  );
  const defined = [...body.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+.*)?$/gm)].map((m) => m[1]!);
  return [...inline, ...defined];
}

/** GitHub's anchors for a Markdown file's headings: lower case, punctuation dropped, spaces as `-`. */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of withoutFences(text).matchAll(/^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const plain = heading!.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/[*_`]/g, "");
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with one link of `file`, or undefined when it is fine. */
function linkProblem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) {
    return "leaves the repository (a URL)";
  }
  const [pathPart = "", fragment] = target.split("#", 2);
  const path = decodeURIComponent(pathPart);
  if (path.startsWith("/")) return "leaves the repository (an absolute path)";
  const resolved = path === "" ? file : resolve(dirname(file), path);
  const inside = relative(root, resolved);
  if (inside === ".." || inside.startsWith(`..${sep}`)) return "leaves the repository";
  if (!existsSync(resolved)) return "names a missing file";
  if (fragment && resolved.endsWith(".md") && statSync(resolved).isFile()) {
    const anchors = headingAnchors(readFileSync(resolved, "utf8"));
    if (!anchors.has(decodeURIComponent(fragment).toLowerCase())) return `names no heading "#${fragment}"`;
  }
  return undefined;
}

describe("links in the repository's Markdown", () => {
  it("stay inside the repository and name files and headings that exist", () => {
    const files = filesEndingIn(".md");
    expect(files.length).toBeGreaterThan(0);
    const problems = files.flatMap((file) =>
      linkTargets(readFileSync(file, "utf8")).flatMap((target) => {
        const problem = linkProblem(file, target);
        return problem ? [`${relative(root, file)}: (${target}) ${problem}`] : [];
      }),
    );
    expect(problems).toEqual([]);
  });

  it("are found and judged as meant (the checker itself)", () => {
    const readme = join(root, "README.md");
    expect(
      linkTargets('[a](docs/rules.md) `[b](x.md)` ![c](<d.png> "t")\n[e]: ../f.md\n```\n[g](h.md)\n```'),
    ).toEqual(["docs/rules.md", "d.png", "../f.md"]);
    expect(linkProblem(readme, "docs/rules.md")).toBeUndefined();
    expect(linkProblem(readme, "docs/rules.md#1-wire-format")).toBeUndefined();
    expect(linkProblem(readme, "docs/rules.md#no-such-heading")).toMatch(/no heading/);
    expect(linkProblem(readme, "docs/missing.md")).toMatch(/missing/);
    expect(linkProblem(readme, "../outside/notes.md")).toMatch(/leaves the repository/);
    expect(linkProblem(readme, "https://example.org/")).toMatch(/leaves the repository/);
    expect(linkProblem(readme, "/etc/hosts")).toMatch(/leaves the repository/);
    expect([...headingAnchors("# A `b` c\n## §8 Projects: more\n## A b c")]).toEqual([
      "a-b-c",
      "8-projects-more",
      "a-b-c-1",
    ]);
  });
});

/** The rules docs/rules.md defines: its sections (`## §N`) and its rules (`**§N.M**`). */
function definedRules(): Set<string> {
  const text = readFileSync(join(root, "docs", "rules.md"), "utf8");
  return new Set([
    ...[...text.matchAll(/^## §(\d+) /gm)].map((m) => `§${m[1]}`),
    ...[...text.matchAll(/^- \*\*(§\d+\.\d+)\*\*/gm)].map((m) => m[1]!),
  ]);
}

/**
 * The rules a text cites: each §N or §N.M in a run that follows "rules.md" (as a word or a Markdown link),
 * such as "rules.md §2.4–§2.6, §7.2"; in the rules and the interface pages themselves, every § they name.
 */
function citedRules(text: string, everySection: boolean): string[] {
  const runs = everySection
    ? [text]
    : [
        ...text.matchAll(
          /rules\.md(?:`?\]\([^)\s]*\))?\s*((?:(?:,\s*|\s*[–-]\s*|\s+and\s+)?§\d+(?:\.\d+)?)+)/g,
        ),
      ].map((m) => m[1]!);
  return runs.flatMap((run) => [...run.matchAll(/§\d+(?:\.\d+)?/g)].map((m) => m[0]));
}

describe("citations of docs/rules.md", () => {
  it("name a section or rule it defines", () => {
    const rules = definedRules();
    expect(rules.has("§1.1")).toBe(true);
    const selfCiting = new Set([join(root, "docs", "rules.md"), join(root, "docs", "http-interface.md")]);
    const problems = [...filesEndingIn(".md"), ...filesEndingIn(".ts")].flatMap((file) =>
      citedRules(readFileSync(file, "utf8"), selfCiting.has(file))
        .filter((rule) => !rules.has(rule))
        .map((rule) => `${relative(root, file)}: ${rule} is not in docs/rules.md`),
    );
    expect(problems).toEqual([]);
  });

  it("are read as meant (the reader itself)", () => {
    expect(
      citedRules("(rules.md §2.4–§2.6, §7.2) and §9; [rules.md](../rules.md)\n§3 and §4", false),
    ).toEqual(["§2.4", "§2.6", "§7.2", "§3", "§4"]);
  });
});
