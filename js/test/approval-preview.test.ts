// An approval shows what the call will do: the code it runs, or — for an outside agent's
// Write or Edit — the change it makes to files, drawn as the diff lines the cell edit card
// and the tool cards use.
import { closeWindow } from "./support/dom-env";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { createApprovalCard } from "../src/chat/approval-cards";
import { t, type Lang, type MessageKey } from "../src/i18n";

after(closeWindow);

const options = {
  lang: (): Lang => "en",
  label: (key: MessageKey, params?: Record<string, string | number>) => t("en", key, params),
};

const preview = (code: string, language: string) => ({
  code,
  language,
  cell_id: null,
  cell_label: null,
  cut: 0,
  summary: "",
  cells: [],
  cells_left_out: 0,
});

test("a change to files is shown as its diff, each line coloured by what it does", () => {
  const diff = ["--- /dev/null", "+++ /w/notes.md", "@@ -0,0 +1,2 @@", "+one", "+two", "--- /w/a.py", "+++ /w/a.py", "@@ -1 +1 @@", "-x = 1", "+x = 2"];
  const card = createApprovalCard({ id: "w1", name: "Write", args: { file_path: "/w/notes.md" }, preview: preview(diff.join("\n"), "diff") }, options);
  assert.equal(card.querySelector(".neta-chat-approval-what")?.textContent, "It makes this change:");
  const lines = Array.from(card.querySelectorAll(".neta-chat-approval-code .neta-diff-line"));
  assert.deepEqual(
    lines.map((line) => line.textContent),
    diff,
  );
  assert.deepEqual(
    lines.map((line) => line.className.replace("neta-diff-line neta-diff-", "")),
    ["meta", "meta", "hunk", "add", "add", "meta", "meta", "hunk", "del", "add"],
  );
  // Not the arguments' JSON.
  assert.ok(!card.textContent?.includes("file_path"));
});

test("a command is shown as the code it runs, not as diff lines", () => {
  const card = createApprovalCard({ id: "c1", name: "execute", args: { command: "rm -rf build" }, preview: preview("rm -rf build", "bash") }, options);
  assert.equal(card.querySelector(".neta-chat-approval-what")?.textContent, "It runs this code:");
  assert.equal(card.querySelector(".neta-chat-approval-code")?.textContent, "rm -rf build");
  assert.equal(card.querySelector(".neta-diff-line"), null);
});

test("inside a hunk a removed '-- …' line and an added '++ …' line are a removal and an addition", () => {
  // difflib's diff of "-- check the owner\nDELETE FROM t;" → "++ x\nDELETE FROM t;", then a
  // second file's header after the first file's hunk has ended.
  const diff = ["--- /w/q.sql", "+++ /w/q.sql", "@@ -1,2 +1,2 @@", "--- check the owner", "+++ x", " DELETE FROM t;", "--- /w/r.sql", "+++ /w/r.sql", "@@ -1 +1 @@", "-a", "+b", "\\ No newline at end of file"];
  const card = createApprovalCard({ id: "e1", name: "Edit", args: {}, preview: preview(diff.join("\n"), "diff") }, options);
  const kinds = Array.from(card.querySelectorAll(".neta-diff-line")).map((line) => line.className.replace("neta-diff-line neta-diff-", ""));
  assert.deepEqual(kinds, ["meta", "meta", "hunk", "del", "add", "same", "meta", "meta", "hunk", "del", "add", "meta"]);
});

test("a diff's text is never read as HTML", () => {
  const card = createApprovalCard({ id: "e2", name: "Edit", args: {}, preview: preview("@@ -0,0 +1 @@\n+<img src=x onerror=alert(1)>", "diff") }, options);
  assert.equal(card.querySelector("img"), null);
  assert.match(card.textContent ?? "", /<img src=x/);
});
