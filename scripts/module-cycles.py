#!/usr/bin/env python3
"""Import circles between the modules of one crate.

    scripts/module-cycles.py crates/lukskit-cli/src [--list] [--allow FILE]

Each .rs file is a module (`a/mod.rs` is `a`, `a/b.rs` is `a::b`). An edge A -> B is a path in
A's code (outside `#[cfg(test)]` blocks, comments and strings) that names module B:
`crate::x::y`, `super::y`, `self::y`, also inside a grouped import (`crate::{x, y::{self, z}}`). Prints every strongly connected set of more than one
module (a circle) and exits 1 when there is one; `--list` prints the edges too.

`--allow FILE` names circles known and being worked on, one a line as this script prints them
without `circle: ` (`a, b, c`; `#` starts a comment): they are reported but do not fail. A
line of FILE that is no longer a circle fails too, so that the list is emptied as they go.
"""
import os
import re
import sys


def modules(root):
    mods = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["main"], ["lib"]):
                rel = []
            mods["::".join(rel)] = os.path.join(d, f)
    return mods


def code_of(text):
    """The code of a file without its test module (at the end of a file, by this code
    base's habit), comments, string and character literals."""
    text = re.split(r"\n#\[cfg\(test\)\]\s*\nmod tests", text)[0]
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i)
            i = n if i < 0 else i + 2
        elif re.match(r'b?r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'b?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := re.match(r"'(?:\\.[^']*|[^'\\])'", text[i:])):
            i += len(m.group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(body):
    """The comma-separated items of a use group's body, nested groups kept whole."""
    items, depth, cur = [], 0, []
    for c in body:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    items.append("".join(cur))
    return [i.strip() for i in items if i.strip()]


def expand_groups(text):
    """`crate::a::{b, c::{d, self}}` written out as `crate::a::b crate::a::c::d crate::a::c`, so
    that a grouped import names each module it imports."""
    out, i = [], 0
    for mt in re.finditer(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*::\{", text):
        if mt.start() < i:
            continue
        depth, j = 1, mt.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        prefix, body = mt.group(0)[:-3], text[mt.end():j - 1]
        paths = []

        def walk(pre, body):
            for item in split_top(body):
                g = re.match(r"((?:[A-Za-z_][A-Za-z0-9_]*::)*)\{(.*)\}$", item, re.S)
                if g:
                    walk(pre + ("::" + g.group(1)[:-2] if g.group(1) else ""), g.group(2))
                    continue
                item = item.split(" as ")[0].strip()
                if item == "self":
                    paths.append(pre)
                elif item != "*":
                    paths.append(pre + "::" + item)

        walk(prefix, body)
        out.append(text[i:mt.start()])
        out.append(" ".join(paths))
        i = j
    out.append(text[i:])
    return "".join(out)


def edges(mods):
    out = {m: set() for m in mods}
    for m, path in mods.items():
        parts = m.split("::") if m else []
        is_dir = path.endswith("mod.rs") or not m
        here = parts if is_dir else parts[:-1]
        text = expand_groups(code_of(open(path, encoding="utf-8").read()))
        for mt in re.finditer(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", text):
            base, rest = mt.group(1), mt.group(2).split("::")[1:]
            if base == "crate":
                start = []
            elif base == "super":
                # The parent of this module.
                start = here if not is_dir else here[:-1]
            else:
                start = parts
            # Longest prefix that is a module.
            target = None
            for k in range(len(rest), 0, -1):
                cand = "::".join(start + rest[:k])
                if cand in mods:
                    target = cand
                    break
            if target is None:
                target = "::".join(start)
            if target != m and target in mods:
                out[m].add(target)
    return out


def sccs(g):
    index, low, stack, on, res, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            res.append(comp)

    sys.setrecursionlimit(10000)
    for v in g:
        if v not in index:
            visit(v)
    return res


def allowed(argv):
    """The circles of the `--allow` file, as the strings printed for them."""
    if "--allow" not in argv:
        return set()
    path = argv[argv.index("--allow") + 1]
    out = set()
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if line:
            out.add(", ".join(sorted(x.strip() for x in line.split(","))))
    return out


def main():
    root = sys.argv[1]
    allow = allowed(sys.argv)
    g = edges(modules(root))
    if "--list" in sys.argv:
        for m in sorted(g):
            for t in sorted(g[m]):
                print(f"{m or '(root)'} -> {t or '(root)'}")
    circles = [", ".join(sorted(x or "(root)" for x in c)) for c in sccs(g) if len(c) > 1]
    failed = False
    for c in circles:
        if c in allow:
            print("allowed circle:", c)
        else:
            print("circle:", c)
            failed = True
    for c in sorted(allow - set(circles)):
        print(f"no longer a circle (remove it from the --allow file): {c}")
        failed = True
    if not circles:
        print(f"{root}: no import circles between {len(g)} modules")
    sys.exit(1 if failed else 0)


main()
