import type { JournalNote } from "@fundraise/bus";
import { EVENTS, type Pseudonymize, redactorOf, scrubEmails } from "@fundraise/protocol";
import type { TSchema } from "typebox";
import type { JournalEntry } from "./format.ts";

/** Where `redacted` says the safety net replaced an e-mail address in free text. */
export const SCRUBBED_TEXT = "(text)";

const AT = 0x40;

/**
 * The entry with nothing personal in it (docs/adr/0034-debugging-from-the-bus.md). Two layers:
 * 1. the policy declared beside the schemas (@fundraise/protocol `x-personal`): each personal field of the
 *    message's schema is replaced by a keyed pseudonym (`[email:…]`) or removed (`[nonce]`);
 * 2. a safety net for what no schema describes (error messages, details, summaries): any e-mail address left
 *    in the text is replaced the same way.
 * Most messages have no personal field and no "@": they pass with two checks and no copy.
 */
export function redactEntry(
  entry: JournalEntry,
  note: JournalNote,
  pseudonymize: Pseudonymize,
): JournalEntry {
  const redacted: string[] = [];
  const schema = schemaOf(note);
  if (entry.body !== undefined && schema !== undefined && note.value !== undefined) {
    const redactor = redactorOf(schema);
    if (redactor) {
      const result = redactor(note.value, pseudonymize);
      if (result.paths.length > 0) {
        entry.body = Buffer.from(JSON.stringify(result.value), "utf8");
        redacted.push(...result.paths);
      }
    }
  }
  if (entry.body !== undefined && entry.body.indexOf(AT) !== -1) {
    const text = Buffer.from(entry.body.buffer, entry.body.byteOffset, entry.body.byteLength).toString(
      "utf8",
    );
    const scrubbed = scrubEmails(text, pseudonymize);
    if (scrubbed !== text) {
      entry.body = Buffer.from(scrubbed, "utf8");
      redacted.push(SCRUBBED_TEXT);
    }
  }
  const headers = entry.properties?.headers as Record<string, unknown> | undefined;
  if (headers && entry.properties) {
    let copy: Record<string, unknown> | undefined;
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== "string" || !value.includes("@")) continue;
      const scrubbed = scrubEmails(value, pseudonymize);
      if (scrubbed === value) continue;
      copy ??= { ...headers };
      copy[name] = scrubbed;
    }
    // The message's own properties are the ones it was sent with: never changed, copied.
    if (copy) {
      entry.properties = { ...entry.properties, headers: copy };
      redacted.push(`(header)`);
    }
  }
  if (entry.summary !== undefined) {
    const scrubbed = scrubValue(entry.summary, pseudonymize);
    if (scrubbed !== entry.summary) {
      entry.summary = scrubbed as Record<string, unknown>;
      redacted.push(SCRUBBED_TEXT);
    }
  }
  if (redacted.length > 0) entry.redacted = [...new Set(redacted)];
  return entry;
}

/**
 * The schema that says which of a note's values are personal: an event's from the protocol's catalog, as
 * the outbox relay publishes every event under a schema that accepts anything (it was checked when it was
 * written); else the one the bus passed.
 */
function schemaOf(note: JournalNote): TSchema | undefined {
  if (note.kind === "event") return EVENTS.get(note.name)?.payload ?? note.schema;
  return note.schema;
}

/** The value with e-mail addresses scrubbed from its strings; the same object when there were none. */
function scrubValue(value: unknown, pseudonymize: Pseudonymize): unknown {
  if (typeof value === "string") return value.includes("@") ? scrubEmails(value, pseudonymize) : value;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items = value.map((item) => scrubValue(item, pseudonymize));
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const scrubbed = scrubValue(item, pseudonymize);
    if (scrubbed === item) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    copy[key] = scrubbed;
  }
  return copy ?? value;
}
