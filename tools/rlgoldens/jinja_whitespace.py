#!/usr/bin/env python3
"""Random templates that exercise Jinja2's whitespace control (trim_blocks,
lstrip_blocks, "-" and "+" markers, comments, raw blocks, loops), rendered by
Python Jinja2 as transformers configures it. Writes
host/rl/chattemplate/testdata/jinja_whitespace.json, which
TestWhitespaceMatchesPython replays against the Go engine. Deterministic
(seeded); needs only the jinja2 package.
"""
import json, random
from jinja2.sandbox import ImmutableSandboxedEnvironment

rng = random.Random(20261201)
TEXTS = ["", " ", "  ", "\t", "\n", "\n\n", " \n", "\n  ", "a", " b ", "c\n", "\n d", "x  \n  y", "\t\tz\n"]


def marker_l(block):
    return rng.choice(["", "", "-", "+"] if block else ["", "", "-"])


def marker_r(block):
    return rng.choice(["", "", "-", "+"] if block else ["", "", "-"])


def tag(body, block=True):
    return "{%" + marker_l(True) + " " + body + " " + marker_r(True) + "%}"


def gen(depth):
    out = []
    for _ in range(rng.randint(1, 5)):
        out.append(rng.choice(TEXTS))
        k = rng.randint(0, 9)
        if k < 3:
            out.append("{{" + marker_l(False) + " v " + marker_r(False) + "}}")
        elif k < 4:
            out.append("{#" + rng.choice(["", "-"]) + " c " + rng.choice(["", "-"]) + "#}")
        elif k < 6 and depth < 3:
            out.append(tag("if flag") + gen(depth + 1) + rng.choice(TEXTS) + tag("endif"))
        elif k < 7 and depth < 3:
            out.append(tag("for i in items") + gen(depth + 1) + tag("endfor"))
        elif k < 8:
            out.append(tag("raw") + rng.choice(TEXTS) + "{{ not }}" + rng.choice(TEXTS) + tag("endraw"))
        else:
            out.append(tag("set w = 1"))
    out.append(rng.choice(TEXTS))
    return "".join(out)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
cases = []
while len(cases) < 300:
    t = gen(0)
    try:
        cases.append({"template": t, "want": env.from_string(t).render(v="V", flag=True, items=[1, 2])})
    except Exception:
        continue
with open("host/rl/chattemplate/testdata/jinja_whitespace.json", "w") as f:
    json.dump(cases, f, ensure_ascii=False, indent=0)
    f.write("\n")
print(len(cases), "cases")
