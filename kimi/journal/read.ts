/** The journal reader's byte level, where tests outside kimi/ import it: kimi/journal/turns.ts. */
export { cursorAt, type JournalLine, readJournal } from "./turns.ts";
