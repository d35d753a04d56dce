#!/usr/bin/python3
#===- check_builtins.py - docs/builtins.md describes exactly the compiler's builtins ===#
#
# CTest runs this as `docs.builtins`. `dslc --list-builtins` prints one line per builtin
# function, its signature as a user calls it (`load(ptr, mask?, other?)`: parameters in
# order, which are also its keywords, `?` on the optional ones, `...` on a variadic one).
# docs/builtins.md must then hold, in any order and under any `##` section:
#
#   * exactly one entry per builtin: a level-3 heading whose text is that signature in
#     backticks, character for character ("### `load(ptr, mask?, other?)`"); every
#     level-3 heading of the page is an entry, so an entry for a builtin that does not
#     exist, or a heading that is not a signature, is an error too;
#   * in each entry (up to the next heading of level 1 to 3), a description and at least
#     one ```kiln-expr example that calls the builtin (`name(` or `.name(`), which must
#     compile inside the page's template kernel (the ```kiln block marked
#     `<!-- template: kiln-expr -->`; see check_snippets.py for the block kinds). An
#     example may be marked `<!-- expect-error: E0404 -->` to show a call the compiler
#     refuses; each entry still needs one example that compiles.
#
# Every mismatch is one line naming the builtin. Exit 1 when anything is wrong.
#
#   /usr/bin/python3 tests/docs/check_builtins.py --dslc build/tools/dslc [--page docs/builtins.md]
#
#===---------------------------------------------------------------------------===#
import argparse
import concurrent.futures
import os
import re
import sys
import tempfile

import doccheck as dc

_ENTRY = re.compile(r"^`(?P<sig>(?P<name>[A-Za-z_]\w*)\((?P<params>[^()`]*)\))`$")


def compiler_builtins(dslc):
    r = dc.run([dslc, "--list-builtins"], dc.REPO)
    if r.rc != 0:
        raise SystemExit("FAIL dslc --list-builtins exited with %s:\n%s" % (r.rc, dc.indent(r.output())))
    sigs = [l.strip() for l in r.stdout.split("\n") if l.strip()]
    bad = [s for s in sigs if not _ENTRY.match("`%s`" % s)]
    if bad or not sigs:
        raise SystemExit("FAIL dslc --list-builtins printed lines that are not signatures: %r" % (bad or sigs))
    return sigs


class Entry:
    def __init__(self, heading, end, page):
        self.heading = heading
        m = _ENTRY.match(heading.text)
        self.sig = m.group("sig") if m else None
        self.name = m.group("name") if m else None
        self.line = heading.line
        self.blocks = [b for b in page.blocks if heading.line < b.line < end]
        # The lines of prose: not in a block, not a heading, not a comment.
        inside = set()
        for b in self.blocks:
            inside.update(range(b.line, b.line + b.text.count("\n") + 2))
        self.prose = [l for k, l in enumerate(page.lines[heading.line:end - 1], heading.line + 1)
                      if l.strip() and k not in inside and not l.lstrip().startswith(("<!--", "#"))]


def entries_of(page):
    out = []
    heads = page.headings
    for k, h in enumerate(heads):
        if h.level != 3:
            continue
        end = next((n.line for n in heads[k + 1:] if n.level <= 3), len(page.lines) + 1)
        out.append(Entry(h, end, page))
    return out


def calls(text, name):
    return re.search(r"(?<![\w])\.?%s\s*\(" % re.escape(name), text) is not None


def compile_example(dslc, template, block):
    source, where = dc.wrap_example(template, block.text, block)
    with tempfile.TemporaryDirectory(prefix="kiln-builtin-") as tmp:
        src = os.path.join(tmp, "example.kiln")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        r = dc.run([dslc, src], tmp)
        return r.rc, dc.relocate(r.output(), src, where), r.output()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check docs/builtins.md against dslc --list-builtins.")
    ap.add_argument("--dslc", help="the compiler (default: $KILN_DSLC, build/tools/dslc, dslc on PATH)")
    ap.add_argument("--page", default=dc.BUILTINS_MD, help="the page (default: docs/builtins.md)")
    args = ap.parse_args(argv)
    dslc = dc.find_dslc(args.dslc)

    sigs = compiler_builtins(dslc)
    page = dc.read_page(args.page)
    problems = ["%s" % e for e in page.errors]
    try:
        template = dc.find_template(page)
    except ValueError as e:
        template = None
        problems.append(str(e))

    entries = entries_of(page)
    by_name = {}
    for e in entries:
        if e.sig is None:
            problems.append("%s:%d: the heading %r is not a builtin's signature in backticks, as "
                            "\"### `name(param, optional?)`\"" % (page.rel, e.line, e.heading.text))
            continue
        by_name.setdefault(e.name, []).append(e)

    names = []
    for sig in sigs:
        name = sig.split("(", 1)[0]
        names.append(name)
        found = by_name.get(name, [])
        if not found:
            problems.append("builtin %s: no entry in %s (add a heading \"### `%s`\" with a description "
                            "and a ```kiln-expr example)" % (name, page.rel, sig))
        elif len(found) > 1:
            problems.append("builtin %s: %d entries, at lines %s; keep one" % (
                name, len(found), ", ".join(str(e.line) for e in found)))
        elif found[0].sig != sig:
            problems.append("builtin %s: the heading at %s:%d says `%s`, but dslc --list-builtins says `%s`" % (
                name, page.rel, found[0].line, found[0].sig, sig))
    for name, found in sorted(by_name.items()):
        if name not in names:
            for e in found:
                problems.append("%s:%d: the entry `%s` names no builtin (dslc --list-builtins has no '%s'); "
                                "remove it or fix the name" % (page.rel, e.line, e.sig, name))

    jobs = []
    for e in entries:
        if e.sig is None:
            continue
        label = "builtin %s" % e.name
        if not e.prose:
            problems.append("%s: its entry (%s:%d) has no description" % (label, page.rel, e.line))
        examples = [b for b in e.blocks if b.lang == dc.EXPR]
        if not examples:
            problems.append("%s: its entry (%s:%d) has no ```kiln-expr example" % (label, page.rel, e.line))
            continue
        if not any(calls(b.text, e.name) for b in examples):
            problems.append("%s: no example of its entry (%s:%d) calls %s" % (label, page.rel, e.line, e.name))
        if not any(not b.markers_of("expect-error") and not b.markers_of("not-checked") for b in examples):
            problems.append("%s: its entry (%s:%d) needs an example that compiles" % (label, page.rel, e.line))
        if template is not None:
            jobs += [(label, b) for b in examples if not b.markers_of("not-checked")]

    def check(job):
        label, b = job
        rc, diag, raw = compile_example(dslc, template, b)
        refused = b.markers_of("expect-error")
        if refused:
            code = refused[0].value
            if rc != 1 or code not in dc.error_codes(raw):
                return "%s: the example at %s:%d should be refused with %s, got exit %s\n%s" % (
                    label, b.rel, b.line, code, rc, dc.indent(diag))
            return None
        if rc != 0:
            return "%s: the example at %s:%d does not compile (exit %s):\n%s" % (
                label, b.rel, b.line, rc, dc.indent(diag))
        return None
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        problems += [p for p in pool.map(check, jobs) if p]

    for p in problems:
        print("FAIL " + p)
    print("%d builtins, %d entries, %d examples compiled; %d problem%s" % (
        len(sigs), len([e for e in entries if e.sig]), len(jobs), len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
