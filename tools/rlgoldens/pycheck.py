#!/usr/bin/env python3
"""Cross-check the golden prompts with Python Jinja2, configured the way
Hugging Face transformers' apply_chat_template configures it (trim_blocks,
lstrip_blocks, loop controls, its tojson and raise_exception). The goldens
come from the JavaScript reference; this shows where Python, the engine the
models' authors use, would render differently.

    go run ./tools/rlgoldens/inputs /tmp/in.json
    python3 tools/rlgoldens/pycheck.py TOKENIZER_DIR /tmp/in.json

Needs only the jinja2 package. Exit status 1 when a prompt differs.
"""
import hashlib, json, sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def main():
    tok_dir, inputs = sys.argv[1], sys.argv[2]
    cfg = json.load(open(f"{tok_dir}/tokenizer_config.json"))
    goldens = {g["name"]: g for g in json.load(open("host/rl/testdata/goldens/qwen3/goldens.json"))["chat"]}
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    tmpl = env.from_string(cfg["chat_template"])
    bad = 0
    for c in json.load(open(inputs))["chat"]:
        kw = dict(messages=c["messages"], tools=c["tools"], add_generation_prompt=c["add_generation_prompt"],
                  eos_token=cfg.get("eos_token"), pad_token=cfg.get("pad_token"))
        if "enable_thinking" in c:
            kw["enable_thinking"] = c["enable_thinking"]
        out = tmpl.render(**kw)
        ok = hashlib.sha256(out.encode()).hexdigest() == goldens[c["name"]]["rendered_sha256"]
        bad += not ok
        print(("same" if ok else "DIFFERENT"), c["name"])
    sys.exit(1 if bad else 0)


main()
