import { defineProject } from "vitest/config";

// The scripts' own helpers (pnpm start's log formatting); the start command itself is tested in e2e/.
export default defineProject({ test: { name: "scripts", include: ["**/*.test.ts"] } });
