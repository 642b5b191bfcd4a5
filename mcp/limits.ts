/** The MCP proxy's bounds on what it reads of one upstream reply (see README "Tools"). */

/** The most the proxy reads of one reply: a JSON body, or one SSE event. */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;
/** The most it reads of one SSE stream as a whole (the events before the response, e.g. progress). */
export const MAX_STREAM_BYTES = 4 * MAX_REPLY_BYTES;
/** The most it reads of a body it only needs the start of (error pages, redirects): the server's words. */
export const ERROR_BODY_BYTES = 64 * 1024;
