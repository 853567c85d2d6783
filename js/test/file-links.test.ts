// The files an outside agent's call names, as links under its tool card's header: each
// file's name and line, and a click that asks the page to open it (`open_file`); a file
// the page cannot open is marked, and its tooltip says why.
import { closeWindow } from "./support/dom-env";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { createToolCard } from "../src/cards/tool-card";
import { fileLinkText } from "../src/cards/file-links";

after(closeWindow);

test("a link shows the file's name, and its line when named", () => {
  assert.equal(fileLinkText({ path: "/srv/work/notes.md", line: 12 }), "notes.md:12");
  assert.equal(fileLinkText({ path: "/srv/work/notes.md" }), "notes.md");
  assert.equal(fileLinkText({ path: "C:\\work\\a.py", line: null }), "a.py");
});

test("the card links its files; a click asks the page to open one, and says when it cannot", async () => {
  const page = document.createElement("div");
  document.body.append(page);
  const asked: Record<string, unknown>[] = [];
  page.addEventListener("neta-nb-notebook", (event) => {
    const detail = (event as CustomEvent).detail;
    detail.handled = true;
    asked.push({ op: detail.op, ...detail.args });
    const missing = detail.args.path === "/srv/work/gone.py";
    detail.respond(missing ? { ok: false, error: { code: "no_file", message: "there is no file at /srv/work/gone.py (any more)" } } : { ok: true, result: { path: "work/notes.md" } });
  });
  const host = document.createElement("div");
  page.append(host);
  const card = createToolCard(host, { lang: "en" });
  const files = () => Array.from(host.querySelectorAll<HTMLButtonElement>(".neta-tool-files .neta-file-link"));
  assert.equal(files().length, 0);
  assert.ok(host.querySelector<HTMLElement>(".neta-tool-files")?.hidden);
  card.update({
    name: "Write",
    label: "Write notes.md",
    status: "done",
    locations: [
      { path: "/srv/work/notes.md", line: 3, notebook: "/srv/work/nb.ipynb" },
      { path: "/srv/work/gone.py", notebook: "/srv/work/nb.ipynb" },
    ],
  });
  assert.deepEqual(
    files().map((link) => [link.textContent, link.title]),
    [
      ["notes.md:3", "/srv/work/notes.md:3: click to open it in JupyterLab"],
      ["gone.py", "/srv/work/gone.py: click to open it in JupyterLab"],
    ],
  );
  // Drawn visible, not folded into the card's body.
  assert.equal(host.querySelector<HTMLElement>(".neta-tool-files")?.hidden, false);
  let toggled = false;
  host.querySelector(".neta-card-header")?.addEventListener("click", () => {
    toggled = true;
  });
  const [notes, gone] = files();
  notes.click();
  gone.click();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(asked, [
    { op: "open_file", path: "/srv/work/notes.md", notebook: "/srv/work/nb.ipynb", line: 3 },
    { op: "open_file", path: "/srv/work/gone.py", notebook: "/srv/work/nb.ipynb" },
  ]);
  assert.equal(toggled, false);
  assert.ok(!notes.classList.contains("neta-is-missing"));
  assert.ok(gone.classList.contains("neta-is-missing"));
  assert.match(gone.title, /no file at \/srv\/work\/gone\.py/);
  // The same files again draw nothing anew (a card is updated on every change of its call).
  const before = files()[0];
  card.update({ status: "done", locations: [
    { path: "/srv/work/notes.md", line: 3, notebook: "/srv/work/nb.ipynb" },
    { path: "/srv/work/gone.py", notebook: "/srv/work/nb.ipynb" },
  ] });
  assert.equal(files()[0], before);
  card.update({ locations: [] });
  assert.equal(files().length, 0);
  card.destroy();
  page.remove();
});
