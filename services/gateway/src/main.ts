import { runService } from "@fundraise/service-kit";
import { loadConfig } from "./config.ts";
import { startGateway } from "./serve.ts";

await runService({ name: "gateway", loadConfig, start: startGateway });
