import { runService } from "@fundraise/service-kit";
import { startStorageApp } from "./app.ts";
import { loadConfig } from "./config.ts";

await runService({ name: "storage", loadConfig, start: startStorageApp });
