/**
 * End to end through `kimi web`: the REST API behind Kimi's web UI, driven as the UI drives it (bearer token
 * from the banner, a session per conversation, the model chosen per session, tool approvals granted over
 * REST).
 */

import { kimiE2eVersions } from "../support/kimi.ts";
import { KimiWeb } from "../support/web-client.ts";
import { E2E_TEST, kimiOrSkip, Rig } from "./harness.ts";
import { failedTurn, recallAndCapture, type Surface } from "./surfaces.ts";

/** The model alias of the rig's config.toml (what the web UI's model picker offers). */
const MODEL = "fake";

/** The versions the web scenarios run on: 2.1.0 by default, the whole matrix when one is asked for. */
const VERSIONS = Deno.env.get("KIMI_E2E_VERSIONS") ? kimiE2eVersions() : ["2.1.0"];

/** The web UI's side of one `kimi web` server. */
function webSurface(rig: Rig, web: KimiWeb): Surface {
  return {
    async newSession(opts = {}) {
      const id = await web.createSession(rig.env.workDir);
      if (opts.model !== false) await web.setModel(id, MODEL);
      return id;
    },
    chooseModel: (sessionId) => web.setModel(sessionId, MODEL),
    async prompt(sessionId, text) {
      const turn = await web.prompt(sessionId, text);
      return {
        ok: turn.reason === "completed",
        answer: turn.texts.join(""),
        approvals: turn.approvals.length,
        durationMs: turn.durationMs,
      };
    },
  };
}

for (const version of VERSIONS) {
  const name = `e2e kimi ${version} web`;
  const install = await kimiOrSkip(version, name);
  Deno.test({ name, ignore: !install, ...E2E_TEST }, async (t) => {
    await using rig = await Rig.create(install!);
    await using web = await KimiWeb.start(rig.env);
    const surface = webSurface(rig, web);

    await t.step(
      "failed turn (no model chosen: model.not_configured): its prompt alone reaches OpenViking at once, committed",
      () => failedTurn(rig, surface, "hello before any model was chosen"),
    );
    await t.step(
      "1+2: recall reaches the model; plain and tool turns captured whole, once, committed",
      () => recallAndCapture(rig, surface),
    );
  });
}
