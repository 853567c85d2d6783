// Where a long line of code may wrap besides its spaces (the <wbr> that diff lines and
// code blocks in answers get): between the parts of a chain, never inside a name or a number.
import assert from "node:assert/strict";
import { test } from "node:test";
import { codeBreaks } from "../src/dom";

function marked(text: string): string {
  let out = "";
  let from = 0;
  for (const at of codeBreaks(text)) {
    out += `${text.slice(from, at)}|`;
    from = at;
  }
  return out + text.slice(from);
}

test("a chain wraps before . and [ and after ( and ,", () => {
  assert.equal(
    marked('+ratings = sales["customer_rating"].dropna().astype(int)'),
    '+ratings = sales|["customer_rating"]|.dropna()|.astype(|int)',
  );
  assert.equal(marked("f(a,b)"), "f(|a,|b)");
});

test("no break inside a number, an ellipsis, an empty call, or next to a space", () => {
  assert.equal(marked("x = 1.5 + 2"), "x = 1.5 + 2");
  assert.equal(marked("..."), "...");
  assert.equal(marked("run() .then( a, b )"), "run() .then( a, b )");
  assert.equal(marked(".start"), ".start");
});
