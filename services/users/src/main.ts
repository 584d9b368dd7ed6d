import { runService } from "@fundraise/service-kit";
import { startUsersApp } from "./app.ts";
import { loadConfig } from "./config.ts";

await runService({ name: "users", loadConfig, start: startUsersApp });
