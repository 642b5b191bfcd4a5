/**
 * The proxy inside the REAL Kimi Code CLI (2.1.0, print mode, user-level mcp.json), with OpenViking down when
 * Kimi starts.
 */

import { join } from "node:path";
import { assertEquals, assertMatch, assertTrue } from "../support/assert.ts";
import { FakeOpenViking } from "../support/fake-openviking.ts";
import { OFFERED_TOOLS } from "../support/fake-mcp.ts";
import { installKimi, kimiCacheRoot, KimiEnv } from "../support/kimi.ts";
import { type ChatRequest, ModelServer } from "../support/model-server.ts";
import { freePort } from "./harness.ts";
import { productionCommand, REPO_ROOT } from "./subprocess.ts";
import { denoEnv } from "../support/run.ts";

const VERSION = "2.1.0";
const installed = (() => {
  try {
    Deno.statSync(join(kimiCacheRoot(), VERSION, ".complete"));
    return true;
  } catch {
    return false;
  }
})();

Deno.test({
  name:
    "mcp/kimi: OpenViking down at Kimi start — the model still gets the tools; a later call reaches the server",
  ignore: !installed,
  async fn() {
    const port = freePort();
    let fake: FakeOpenViking | undefined;
    const seen: ChatRequest[] = [];
    const model = await ModelServer.start(async (req) => {
      seen.push(req);
      if (!req.hasToolResult) {
        fake = await FakeOpenViking.start({ port, mcp: { sse: true } }); // the server comes up mid-session
        return { kind: "tool", calls: [{ name: "mcp__openviking__search", args: { query: "indentation" } }] };
      }
      return { kind: "text", text: "done" };
    });
    const env = await KimiEnv.create(await installKimi(VERSION), { baseUrl: model.baseUrl });
    try {
      const { command, args } = await productionCommand();
      await Deno.writeTextFile(
        join(env.kimiHome, "mcp.json"),
        JSON.stringify({
          mcpServers: {
            openviking: {
              command,
              args: args.map((a) => (a === "main.ts" ? join(REPO_ROOT, "main.ts") : a)),
              cwd: REPO_ROOT,
              env: { OPENVIKING_URL: `http://127.0.0.1:${port}`, ...denoEnv() },
            },
          },
        }),
      );
      const result = await env.print("Which indentation do I prefer?", { timeoutMs: 90_000 });
      assertEquals(result.code, 0, result.stderr);
      const offered = seen[0].toolNames.filter((n) => n.startsWith("mcp__openviking__"));
      assertEquals(offered.sort(), OFFERED_TOOLS.map((t) => `mcp__openviking__${t}`).sort());
      const toolOutput = seen.find((r) => r.hasToolResult)?.lastToolOutput ?? "";
      assertMatch(toolOutput, /fake search: \{"query":"indentation"\}/);
      assertTrue(fake !== undefined && fake.mcp.receivedMethod("initialize").length === 1);
    } finally {
      await env.dispose();
      await model.close();
      await fake?.close();
    }
  },
});
