// `open_file`: a file a chat's card names, opened in the page by its path under the
// folder the server serves — found from the kernel's notebook's absolute path and this
// notebook's path under it — at the line named; refused, with the reason, when the file
// is outside that folder or not there, or the notebook is not the kernel's.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { NotebookPanel } from "@jupyterlab/notebook";
import { openFile, underRoot } from "../src/open-file";
import type { OpServices } from "../src/ops";
import { BridgeFailure } from "../src/protocol";

test("a file is placed under the folder the server serves, found from the kernel's notebook", () => {
  const notebook = "/srv/work/analysis.ipynb";
  assert.equal(underRoot("/srv/work/notes.md", notebook, "work/analysis.ipynb"), "work/notes.md");
  assert.equal(underRoot("/srv/data/./a.csv", notebook, "work/analysis.ipynb"), "data/a.csv");
  assert.equal(underRoot("/srv/work/src/../top.py", notebook, "work/analysis.ipynb"), "work/top.py");
  // The server serves "/" itself.
  assert.equal(underRoot("/etc/hosts", "/analysis.ipynb", "analysis.ipynb"), "etc/hosts");
  // A Windows server's paths.
  assert.equal(underRoot("C:\\srv\\work\\a.py", "C:\\srv\\work\\nb.ipynb", "work/nb.ipynb"), "work/a.py");
  // Out of the folder: the page cannot reach it.
  assert.equal(underRoot("/etc/passwd", notebook, "work/analysis.ipynb"), "outside");
  assert.equal(underRoot("/srv/../etc/passwd", notebook, "work/analysis.ipynb"), "outside");
  assert.equal(underRoot("/srvx/a.py", notebook, "work/analysis.ipynb"), "outside");
  assert.equal(underRoot("/srv", notebook, "work/analysis.ipynb"), "outside");
  // The page's notebook is not the kernel's: moved since its kernel started, or another's.
  assert.equal(underRoot("/srv/work/notes.md", notebook, "moved/analysis.ipynb"), "other");
  assert.equal(underRoot("/srv/work/notes.md", notebook, "work/other.ipynb"), "other");
  // Where the page's path is an end of the kernel's, the server serves the rest.
  assert.equal(underRoot("/srv/work/notes.md", notebook, "analysis.ipynb"), "notes.md");
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
  const notebook = "/srv/work/analysis.ipynb";
  const result = await openFile(panel, { path: "/srv/work/notes.md", notebook, line: 12 }, services);
  assert.deepEqual(result, { path: "work/notes.md" });
  assert.deepEqual(opened, ["work/notes.md"]);
  assert.deepEqual(cursor, [{ line: 11, column: 0 }]);
  // Without a line: opened, the cursor left where the editor puts it.
  await openFile(panel, { path: "/srv/work/notes.md", notebook }, services);
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
  const notebook = "/srv/work/analysis.ipynb";
  await refused({ path: "/etc/passwd", notebook }, "outside_root", /outside the folder this Jupyter server serves/);
  await refused({ path: "/srv/work/gone.md", notebook }, "no_file", /no file at \/srv\/work\/gone\.md/);
  await refused({ path: "/srv/work/data", notebook }, "no_file", /is a folder/);
  await refused({ path: "/srv/work/notes.md" }, "outside_root", /not started by the server/);
  await refused({ path: "/old/place/notes.md", notebook: "/old/place/analysis.ipynb" }, "outside_root", /not the one its kernel was started for/);
  assert.deepEqual(opened, []);
});
