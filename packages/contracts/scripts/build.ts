// `pnpm build`: compile solidity/ and regenerate src/generated/.
import { generate, generatedDir, writeGenerated } from "./generate.ts";

const started = Date.now();
const { result, files } = generate({ force: process.argv.includes("--force") });
writeGenerated(files);
console.log(
  `solc ${result.solcVersion}: ${result.contracts.length} contracts ` +
    `(${result.fromCache ? "cached" : "compiled"}), ${files.size} files in ${generatedDir} ` +
    `in ${Date.now() - started} ms`,
);
