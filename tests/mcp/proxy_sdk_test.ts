/**
 * The proxy (in-process) against the official MCP SDK's Streamable HTTP server, stateless like OpenViking's,
 * SSE or JSON replies: a whole session.
 */

import { assertEquals, assertTrue } from "../support/assert.ts";
import { tempDir } from "../support/temp.ts";
import { errorOf, type Json, resultOf, startProxy, toolNames } from "./harness.ts";
import { SdkServer } from "./sdk-server.ts";

const KEY = "sdk-peer-key-31415";

const text = (response: Json) => String((resultOf(response).content as Json[])[0].text);

for (const json of [false, true]) {
  const mode = json ? "JSON" : "SSE";
  Deno.test(`mcp/sdk (${mode}): a whole session through the proxy`, async () => {
    await using home = await tempDir("ovk-mcp-");
    const server = SdkServer.start({ json, apiKey: KEY });
    try {
      // The SDK peer's tools are not OpenViking's: all of them are offered (the protocol is under test here).
      const proxy = startProxy({
        HOME: home.path,
        OPENVIKING_URL: server.url,
        OPENVIKING_API_KEY: KEY,
        OPENVIKING_MCP_TOOLS: "all",
      });
      const init = resultOf(await proxy.initialize("2025-11-25"));
      assertEquals(init.protocolVersion, "2025-11-25");
      assertEquals((init.serverInfo as Json).name, "sdk-peer");
      assertEquals(toolNames(await proxy.request(1, "tools/list")).sort(), ["chatty", "echo"]);
      assertEquals(
        text(await proxy.request(2, "tools/call", { name: "echo", arguments: { text: "hi" } })),
        "echo: hi",
      );
      assertEquals(resultOf(await proxy.request(3, "ping")), {});
      // a tool error from the server is passed through unchanged
      const bad = await proxy.request(4, "tools/call", { name: "echo", arguments: { text: 5 } });
      assertTrue(resultOf(bad).isError === true || "error" in bad);
      assertEquals(errorOf(await proxy.request(5, "no/such/method")).code, -32601);

      const chatty = await proxy.request(6, "tools/call", { name: "chatty", arguments: { count: 3 } });
      assertEquals(text(chatty), "done after 3");
      const logs = proxy.messages().filter((m) => m.method === "notifications/message");
      // JSON mode cannot carry messages besides the response; SSE delivers them before it
      assertEquals(logs.length, json ? 0 : 3);

      assertEquals(await proxy.close(), 0);
      const posts = server.seen.filter((r) => r.method === "POST");
      assertTrue(posts.every((r) => r.authorization === `Bearer ${KEY}`));
      assertTrue(
        posts.filter((r) => r.rpc !== "initialize").every((r) => r.protocolVersion === "2025-11-25"),
      );
      assertTrue(posts.every((r) => r.sessionId === null));
    } finally {
      await server.close();
    }
  });
}
