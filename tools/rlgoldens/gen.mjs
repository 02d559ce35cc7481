// Reference outputs for the Go tokenizer and chat template tests.
//
//   node gen.mjs TOKENIZER_DIR INPUTS.json OUT.json
//
// Renders every conversation of INPUTS.json (written by
// `go run ./tools/rlgoldens/inputs`) with @huggingface/jinja, as
// transformers.js's apply_chat_template does, tokenizes the result and the
// texts with @huggingface/tokenizers (add_special_tokens: false), decodes
// the id sequences, and writes OUT.json. Run it through run.sh.
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";

const [tokDir, inputsPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node gen.mjs TOKENIZER_DIR INPUTS.json OUT.json");
  process.exit(2);
}
const tokJSON = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8"));
const cfg = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer_config.json"), "utf8"));
const inputs = JSON.parse(fs.readFileSync(inputsPath, "utf8"));
const tok = new Tokenizer(tokJSON, cfg);
const template = new Template(cfg.chat_template);

const sha256 = (s) => crypto.createHash("sha256").update(s, "utf8").digest("hex");
const encode = (s) => tok.encode(s, { add_special_tokens: false }).ids.map(Number);
const name = (t) => (t == null ? undefined : typeof t === "string" ? t : t.content);
const special = {};
for (const k of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
  if (name(cfg[k]) !== undefined) special[k] = name(cfg[k]);
}

const FULL_TEXT = 8000; // rendered prompts up to this many UTF-16 units are stored whole
const FULL_IDS = 2000;
const TAIL = 400;

const chat = inputs.chat.map((c) => {
  const vars = { ...special, messages: c.messages, tools: c.tools ?? null, add_generation_prompt: c.add_generation_prompt };
  if (c.enable_thinking !== undefined) vars.enable_thinking = c.enable_thinking;
  const rendered = template.render(vars);
  const ids = encode(rendered);
  const g = {
    name: c.name,
    rendered_len: Buffer.byteLength(rendered, "utf8"),
    rendered_sha256: sha256(rendered),
    ids_len: ids.length,
    ids_sha256: sha256(ids.join(",")),
  };
  if (rendered.length <= FULL_TEXT) g.rendered = rendered;
  if (ids.length <= FULL_IDS) g.ids = ids;
  else g.ids_tail = ids.slice(-TAIL);
  return g;
});

const texts = inputs.texts.map((t) => {
  const ids = encode(t.text);
  return { name: t.name, ids, decoded: tok.decode(ids), decoded_skip_special: tok.decode(ids, { skip_special_tokens: true }) };
});

const decodes = inputs.decodes.map((d) => ({
  name: d.name,
  ids: d.ids,
  decoded: tok.decode(d.ids),
  decoded_skip_special: tok.decode(d.ids, { skip_special_tokens: true }),
}));

// gen.mjs runs from the directory its packages are installed in.
const here = path.dirname(fileURLToPath(import.meta.url));
const version = (p) => JSON.parse(fs.readFileSync(path.join(here, "node_modules", p, "package.json"), "utf8")).version;
let source = "";
try {
  const s = JSON.parse(fs.readFileSync(path.join(tokDir, "SOURCE.json"), "utf8"));
  source = ` on ${s.package}@${s.version} (${s.integrity.slice(0, 19)}…)`;
} catch {}
const generator =
  `tools/rlgoldens/gen.mjs: @huggingface/tokenizers@${version("@huggingface/tokenizers")}, ` +
  `@huggingface/jinja@${version("@huggingface/jinja")}, node ${process.version}${source}`;

// One entry per line: reviewable diffs without an id per line.
const list = (xs) => "[\n" + xs.map((x) => "  " + JSON.stringify(x)).join(",\n") + "\n ]";
fs.writeFileSync(
  outPath,
  `{\n "generator": ${JSON.stringify(generator)},\n "chat": ${list(chat)},\n "texts": ${list(texts)},\n "decodes": ${list(decodes)}\n}\n`,
);
console.error(`wrote ${outPath}: ${chat.length} conversations, ${texts.length} texts, ${decodes.length} decodes`);
