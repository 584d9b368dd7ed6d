import { describe, expect, it } from "vitest";
import { gatewayContentType, SNIFF_BYTES, sniffContentType, typeByExtension } from "../src/sniff.ts";

/** Content-Type sniffing as Kubo's gateway does it (extension, then gabriel-vasile/mimetype's signatures). */
const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));
const PNG_1X1 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);

describe("sniffContentType (the first bytes, as mimetype reads them)", () => {
  it.each([
    ["PNG", PNG_1X1, "image/png"],
    ["JPEG", bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10], "JFIF"), "image/jpeg"],
    ["GIF87a", bytes("GIF87a", [1, 0, 1, 0]), "image/gif"],
    ["GIF89a", bytes("GIF89a", [1, 0, 1, 0]), "image/gif"],
    ["WebP", bytes("RIFF", [0x24, 0, 0, 0], "WEBPVP8 ", [0, 0, 0, 0]), "image/webp"],
    ["PDF", bytes("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj"), "application/pdf"],
    ["PDF after a preamble (within 1024 bytes)", bytes("x".repeat(500), "%PDF-1.7"), "application/pdf"],
    ["ZIP", bytes("PK", [3, 4, 20, 0, 0, 0]), "application/zip"],
    ["an empty ZIP", bytes("PK", [5, 6], [0, 0, 0, 0]), "application/zip"],
    ["GZIP", bytes([0x1f, 0x8b, 8, 0, 0, 0, 0, 0]), "application/gzip"],
    ["HTML", bytes("<!DOCTYPE html>\n<html><body>hi</body></html>"), "text/html; charset=utf-8"],
    ["HTML after whitespace, any case", bytes("\n\t  <HtMl lang=en>"), "text/html; charset=utf-8"],
    ["an HTML comment", bytes("<!-- x -->"), "text/html; charset=utf-8"],
    ["XML", bytes('<?xml version="1.0"?><a/>'), "text/xml; charset=utf-8"],
    ["ASCII text", bytes("hello world\n"), "text/plain; charset=utf-8"],
    ["UTF-8 text", Buffer.from("héllo wörld ✓\n", "utf8"), "text/plain; charset=utf-8"],
    ["text with a UTF-8 BOM", bytes([0xef, 0xbb, 0xbf], "hi"), "text/plain; charset=utf-8"],
    ["Latin-1 text", bytes("caf\xe9\n"), "text/plain; charset=iso-8859-1"],
    ["Windows-1252 text", bytes("\x93quoted\x94\n"), "text/plain; charset=windows-1252"],
    ["binary", bytes([0, 1, 2, 3, 0xfe, 0xff]), "application/octet-stream"],
    ["nothing", bytes(), "text/plain"],
  ])("%s", (_name, head, expected) => {
    expect(sniffContentType(head)).toBe(expected);
  });

  it("a tag needs whitespace or `>` after it, and `<a` is not `<abbr`", () => {
    expect(sniffContentType(bytes("<abbr>x</abbr>"))).toBe("text/plain; charset=utf-8");
    expect(sniffContentType(bytes("<p>x</p>"))).toBe("text/html; charset=utf-8");
  });

  it("`%PDF-` past the first 1024 bytes is not a PDF", () => {
    expect(sniffContentType(bytes("x".repeat(1024), "%PDF-1.4"))).toBe("text/plain; charset=utf-8");
  });

  it("reads at most SNIFF_BYTES: a binary byte after them, or a UTF-8 character cut by them, changes nothing", () => {
    expect(sniffContentType(bytes("a".repeat(SNIFF_BYTES), [0]))).toBe("text/plain; charset=utf-8");
    const cut = Buffer.concat([Buffer.from("a".repeat(SNIFF_BYTES - 1)), Buffer.from("✓", "utf8")]);
    expect(sniffContentType(cut)).toBe("text/plain; charset=utf-8");
  });
});

describe("gatewayContentType (extension first, as Go's mime.TypeByExtension)", () => {
  it("a known extension wins over the bytes, in any case", () => {
    expect(gatewayContentType("notes.pdf", PNG_1X1)).toBe("application/pdf");
    expect(gatewayContentType("photo.PNG", bytes("hello"))).toBe("image/png");
    expect(typeByExtension("dir/a.JSON")).toBe("application/json");
  });

  it("no or an unknown extension: the bytes decide (the project's `whitepaper` and `image`)", () => {
    expect(typeByExtension("whitepaper")).toBe("");
    expect(typeByExtension("archive.unknownext")).toBe("");
    expect(gatewayContentType("whitepaper", bytes("%PDF-1.4\n"))).toBe("application/pdf");
    expect(gatewayContentType("image", PNG_1X1)).toBe("image/png");
    expect(gatewayContentType("", bytes("plain"))).toBe("text/plain; charset=utf-8");
  });

  it("HTML without its charset, by extension or by content (kubo#2203)", () => {
    expect(gatewayContentType("index.html", bytes("x"))).toBe("text/html");
    expect(gatewayContentType("page", bytes("<html>"))).toBe("text/html");
  });
});
