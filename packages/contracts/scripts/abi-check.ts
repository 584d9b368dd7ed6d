// `pnpm abi:check`: regenerate into a temporary directory and fail when src/generated/ differs from it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { diffGenerated, generate, generatedDir, writeGenerated } from "./generate.ts";

const { files } = generate();
const temp = mkdtempSync(path.join(tmpdir(), "contracts-abi-"));
try {
  writeGenerated(files, temp);
  const stale = diffGenerated(files, generatedDir);
  if (stale.length > 0) {
    console.error(`src/generated is stale (fresh output in ${temp}):\n  ${stale.join("\n  ")}`);
    console.error("Run `pnpm --filter @fundraise/contracts build` and commit the result.");
    process.exitCode = 1;
  } else {
    console.log(`src/generated is up to date (${files.size} files).`);
  }
} finally {
  if (process.exitCode !== 1) rmSync(temp, { recursive: true, force: true });
}
