import { runService } from "@fundraise/service-kit";
import { startProjectsApp } from "./app.ts";
import { loadConfig } from "./config.ts";

await runService({ name: "projects", loadConfig, start: startProjectsApp });
