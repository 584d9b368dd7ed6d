import { runService } from "@fundraise/service-kit";
import { startAuthApp } from "./app.ts";
import { loadConfig } from "./config.ts";

await runService({ name: "auth", loadConfig, start: startAuthApp });
