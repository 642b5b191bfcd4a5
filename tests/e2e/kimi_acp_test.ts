/** End to end over the Agent Client Protocol. */

import { assertEquals, assertMatch } from "../support/assert.ts";
import { KimiAcp } from "../support/acp-client.ts";
import { kimiE2eVersions } from "../support/kimi.ts";
import { E2E_TEST, kimiOrSkip, Rig } from "./harness.ts";
import { recallAndCapture, type Surface } from "./surfaces.ts";

/** The editor's side of one `kimi acp` process. */
function acpSurface(rig: Rig, agent: KimiAcp): Surface {
  return {
    newSession: () => agent.newSession(rig.env.workDir),
    async prompt(sessionId, text) {
      const turn = await agent.prompt(sessionId, text);
      return {
        ok: turn.stopReason === "end_turn",
        answer: turn.text,
        approvals: turn.permissions.length,
        durationMs: turn.durationMs,
      };
    },
    shown: (sessionId) => JSON.stringify(agent.updates(sessionId)),
  };
}

for (const version of kimiE2eVersions()) {
  const name = `e2e kimi ${version} acp`;
  const install = await kimiOrSkip(version, name);
  Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
    await using rig = await Rig.create(install!);
    await using agent = await KimiAcp.start(rig.env);
    assertEquals(agent.initialized?.protocolVersion, 1);
    assertEquals(agent.initialized?.agentInfo?.version, version);
    const surface = acpSurface(rig, agent);

    await t.step("session ids are Kimi's own", async () => {
      assertMatch(await surface.newSession(), /^session_[0-9a-f-]{36}$/);
    });
    await t.step(
      "1+2: recall reaches the model, not the editor; plain and tool turns captured whole, once, committed",
      () => recallAndCapture(rig, surface),
    );
    const exit = await agent.close();
    assertEquals(exit.code, 0, `kimi acp exits 0 when the editor closes it:\n${agent.stderr}`);
  });
}
