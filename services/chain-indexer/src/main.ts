import { runService } from "@fundraise/service-kit";
import { startChainIndexerApp } from "./app.ts";
import { loadConfig } from "./config.ts";

await runService({ name: "chain-indexer", loadConfig, start: startChainIndexerApp });
