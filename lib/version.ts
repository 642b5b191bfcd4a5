/** Version of openviking-kimi; kept in step with deno.json and kimi.plugin.json by tests. */
export const VERSION = "0.1.0";

/** Client id used in paths and the User-Agent, the same one OpenViking's own Kimi plugin uses. */
const CLIENT_ID = "kimicode";

/** The User-Agent every request to OpenViking carries. */
export const USER_AGENT = `openviking-memory-${CLIENT_ID}/${VERSION}`;
