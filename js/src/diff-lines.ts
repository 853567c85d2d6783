/**
 * Lines of a unified diff as the cards draw them: each line a block of its own, coloured
 * by what it does (added, removed, a hunk's header, a file's header). The cell edit card
 * draws its proposals so; a ```diff block in an answer or a tool's result (an outside
 * agent's file edit) is drawn the same way.
 */
import "./diff-lines.css";
import { element } from "./dom";

export type DiffLineKind = "add" | "del" | "hunk" | "meta" | "same";

/** The class of one diff line read alone: what it does to the text. A line of a hunk
 * whose text starts with "--" or "++" reads as a file's header this way: `diffLineKinds`
 * reads a whole diff right. */
export function diffLineKind(line: string): DiffLineKind {
  if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("\\")) return "meta";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "same";
}

const HUNK = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

/** The class of each line of a unified diff, read in order: inside a hunk (as many lines
 * as its header counts) a line is what its first character says — a removed "-- note"
 * is a removal, not a file's header; outside, "---" and "+++" name the files. */
export function diffLineKinds(lines: readonly string[]): DiffLineKind[] {
  let before = 0;
  let after = 0;
  return lines.map((line) => {
    if (before > 0 || after > 0) {
      const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("\\") ? "meta" : "same";
      if (kind !== "add" && kind !== "meta") before -= 1;
      if (kind !== "del" && kind !== "meta") after -= 1;
      return kind;
    }
    const hunk = HUNK.exec(line);
    if (hunk) {
      before = hunk[1] === undefined ? 1 : Number(hunk[1]);
      after = hunk[2] === undefined ? 1 : Number(hunk[2]);
      return "hunk";
    }
    return diffLineKind(line);
  });
}

/** One line of a diff, empty (its text is the caller's to add); `kind`: its class when
 * the caller read the whole diff (`diffLineKinds`). */
export function diffLine(line: string, kind: DiffLineKind = diffLineKind(line)): HTMLElement {
  return element("span", `neta-diff-line neta-diff-${kind}`);
}

/** Each ```diff code block under `root` drawn as diff lines (its text unchanged). */
export function colourDiffBlocks(root: ParentNode): void {
  for (const code of Array.from(root.querySelectorAll("pre > code.language-diff"))) {
    const text = code.textContent ?? "";
    const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
    const kinds = diffLineKinds(lines);
    code.replaceChildren();
    for (const [index, line] of lines.entries()) {
      const row = diffLine(line, kinds[index]);
      row.textContent = line;
      code.append(row, "\n");
    }
    code.parentElement?.classList.add("neta-diff-block");
  }
}
