/** Test helper process: replays our pending queue in `dir` against `url` once. */
import { Budget, createClient } from "../../openviking/client.ts";
import { replayAll } from "../../openviking/replay.ts";

const [dir, url] = Deno.args;
const client = createClient({ baseUrl: url, userAgent: "test", timeoutMs: 5000 });
const report = await replayAll(dir, client, {
  limit: 1000,
  ttlDays: 7,
  budget: new Budget(30_000),
});
console.log(JSON.stringify(report));
