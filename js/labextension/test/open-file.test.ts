// `open_file`: a file a chat's card names, opened in the page by its path under the
// server's root — worked out from the notebook's own path and the file's path from the
// notebook's folder — at the line named; refused, with the reason, when the file is
// outside the root or not there.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { openFile, underRoot } from "../src/open-file";
import type { OpServices } from "../src/ops";
import { BridgeFailure } from "../src/protocol";

test("a path from the notebook's folder is placed under the server's root", () => {
  assert.equal(underRoot("work/analysis.ipynb", "notes.md"), "work/notes.md");
  assert.equal(underRoot("work/analysis.ipynb", "./src/../data/a.csv"), "work/data/a.csv");
  assert.equal(underRoot("work/deep/nb.ipynb", "../../top.py"), "top.py");
  assert.equal(underRoot("nb.ipynb", "a/b.py"), "a/b.py");
  // Out of the root: the page cannot reach it.
  assert.equal(underRoot("work/analysis.ipynb", "../../etc/passwd"), null);
  assert.equal(underRoot("nb.ipynb", "../x.py"), null);
  assert.equal(underRoot("nb.ipynb", "."), null);
});

function page(files: Record<string, string>) {
  const opened: string[] = [];
  const cursor: { line: number; column: number }[] = [];
  const editor = {
    setCursorPosition: (position: { line: number; column: number }) => cursor.push(position),
    revealPosition: () => {},
  };
  const services: OpServices = {
    executor: null,
    sessionDialogs: null,
    contents: {
      get: async (path: string) => {
        if (!(path in files)) throw Object.assign(new Error("Not Found"), { response: { status: 404 } });
        return { type: files[path], path };
      },
      save: async (path: string) => ({ path }),
    },
    openFile: async (path: string) => {
      opened.push(path);
      return { context: { ready: Promise.resolve() }, content: { editor } };
    },
  };
  const panel = { context: { path: "work/analysis.ipynb" } } as unknown as NotebookPanel;
  return { panel, services, opened, cursor };
}

test("a file is opened at the line the call named", async () => {
  const { panel, services, opened, cursor } = page({ "work/notes.md": "file" });
  const result = await openFile(panel, { path: "/srv/work/notes.md", from_notebook: "notes.md", line: 12 }, services);
  assert.deepEqual(result, { path: "work/notes.md" });
  assert.deepEqual(opened, ["work/notes.md"]);
  assert.deepEqual(cursor, [{ line: 11, column: 0 }]);
  // Without a line: opened, the cursor left where the editor puts it.
  await openFile(panel, { path: "/srv/work/notes.md", from_notebook: "notes.md" }, services);
  assert.equal(cursor.length, 1);
});

test("what cannot be opened is refused with the reason, and nothing is opened", async () => {
  const { panel, services, opened } = page({ "work/data": "directory" });
  const refused = async (args: Record<string, unknown>, code: string, words: RegExp) => {
    await assert.rejects(openFile(panel, args, services), (error: unknown) => {
      assert.ok(error instanceof BridgeFailure);
      assert.equal(error.code, code);
      assert.match(error.message, words);
      return true;
    });
  };
  await refused({ path: "/etc/passwd", from_notebook: "../../etc/passwd" }, "outside_root", /outside the folder this Jupyter server serves/);
  await refused({ path: "/srv/work/gone.md", from_notebook: "gone.md" }, "no_file", /no file at \/srv\/work\/gone\.md/);
  await refused({ path: "/srv/work/data", from_notebook: "data" }, "no_file", /is a folder/);
  await refused({ path: "/srv/work/notes.md" }, "outside_root", /not started by this Jupyter server/);
  assert.deepEqual(opened, []);
});
