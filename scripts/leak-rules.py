#!/usr/bin/env python3
"""Writes src/model/leaks/vetted_table.rs from gitleaks' rules file.

    python3 scripts/leak-rules.py path/to/gitleaks.toml COMMIT

The table is data: each rule's id, regex, entropy floor, secret group,
keywords and allowlists, as the rules file gives them. What is left out, and
why:

- descriptions (the table names a rule by its id);
- rules bound to a file name (`path`): state files have no such names;
- `generic-api-key`: `assigned_secret` is that rule here, tuned for prose;
- rules whose id, with `-` as `_`, is already a hand rule (`jwt`,
  `private_key`): the hand rule is kept;
- allowlists that only name paths, for the same reason as `path`.

An allowlist with `condition = "AND"` and paths can never hold for a state
file, so it is left out as well.
"""

import re
import sys
import tomllib

HAND = {"jwt", "private_key"}
SKIP = {"generic-api-key"}


def rust_str(s):
    hashes = "#"
    while f'"{hashes}' in s:
        hashes += "#"
    return f'r{hashes}"{s}"{hashes}'


def strs(items):
    return "&[" + ", ".join(rust_str(i) for i in items) + "]"


def prefix(regex):
    """The case-sensitive literal a match must start with, if 4+ long."""
    s = regex
    for lead in (r"\b", "(?:", "("):
        if s.startswith(lead):
            s = s[len(lead):]
    out = ""
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in ".-/":
            c, step = s[i + 1], 2
        elif re.match(r"[A-Za-z0-9_:/=-]", c):
            step = 1
        else:
            break
        # A quantified character is not part of the literal.
        if i + step < len(s) and s[i + step] in "?*{+":
            break
        out += c
        i += step
    # A context word (`curl`, `https://`) is not a token's prefix.
    if re.fullmatch(r"[a-z:/]*", out):
        return ""
    return out if len(out) >= 4 else ""


def rust_regex(regex):
    """Go reads a `{` that starts no repetition as itself; Rust refuses it."""
    out, i, in_class = "", 0, False
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            out += regex[i : i + 2]
            i += 2
            continue
        if in_class:
            in_class = c != "]" or out.endswith("[") or out.endswith("[^")
        elif c == "[":
            in_class = True
        elif c == "{" and not re.match(r"\{\d+(?:,\d*)?\}", regex[i:]):
            c = "\\{"
        out += c
        i += 1
    return out


def allow(a):
    if a.get("paths") and (a.get("condition") == "AND" or not (a.get("regexes") or a.get("stopwords"))):
        return None
    # Only the secret is matched against (the rules left out are the ones
    # whose allowlists look at the match or its line).
    if a.get("regexTarget", "secret") != "secret":
        sys.exit(f"an allowlist matches its {a['regexTarget']}: teach vetted.rs that first")
    return (
        f"Allow {{ "
        f"regexes: {strs([rust_regex(r) for r in a.get('regexes', [])])}, "
        f"stopwords: {strs(a.get('stopwords', []))} }}"
    )


def main():
    path, commit = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        config = tomllib.load(f)
    rules = []
    for r in config["rules"]:
        kind = r["id"].replace("-", "_")
        if r["id"] in SKIP or kind in HAND or "path" in r or "regex" not in r:
            continue
        allows = [x for x in (allow(a) for a in r.get("allowlists", [])) if x]
        rules.append(
            "    Vetted {\n"
            f"        kind: {rust_str(kind)},\n"
            f"        regex: {rust_str(rust_regex(r['regex']))},\n"
            f"        entropy: {float(r.get('entropy', 0))!r},\n"
            f"        group: {int(r.get('secretGroup', 0))},\n"
            f"        keywords: {strs([k.lower() for k in r.get('keywords', [])])},\n"
            f"        prefix: {rust_str(prefix(r['regex']))},\n"
            f"        allow: &[{', '.join(allows)}],\n"
            "    },\n"
        )
    g = config["allowlist"]
    out = [
        "// Written by scripts/leak-rules.py: do not edit by hand.\n",
        f"// From gitleaks' config/gitleaks.toml at {commit}.\n",
        "// Copyright (c) 2019 Zachary Rice; MIT License (see\n",
        "// src/model/leaks/GITLEAKS-LICENSE). Descriptions and file-bound\n",
        "// rules are left out (the script says which and why).\n\n",
        "use super::vetted_rule::{Allow, Vetted};\n\n",
        f"pub(super) const GLOBAL_REGEXES: &[&str] = {strs([rust_regex(r) for r in g.get('regexes', [])])};\n\n",
        f"pub(super) const GLOBAL_STOPWORDS: &[&str] = {strs(g.get('stopwords', []))};\n\n",
        "pub(super) const VETTED: &[Vetted] = &[\n",
        *rules,
        "];\n",
    ]
    with open("src/model/leaks/vetted_table.rs", "w") as f:
        f.write("".join(out))
    print(f"{len(rules)} rules of {len(config['rules'])}")


if __name__ == "__main__":
    main()
