#===- doccheck.py - Reading the Kiln code blocks of Markdown pages -------------===#
#
# Shared by check_snippets.py (docs.snippets) and check_builtins.py (docs.builtins):
#  * read_page(path): the fenced code blocks of a Markdown page, each with the marker
#    comments written right before it (the markers are described in check_snippets.py);
#  * the ```kiln-expr template, read from docs/builtins.md, and how an example is
#    wrapped in it;
#  * compile_source(): one `dslc FILE` on a source written to a temporary folder, with
#    the diagnostics' locations turned back into the page's own lines.
#
#===---------------------------------------------------------------------------===#
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The differential runner's helpers: dtypes, .npy encoding, comparisons, Philox.
sys.path.insert(0, os.path.join(REPO, "tests", "examples"))

# Fence languages this checker knows. Any other language (python, sh, text, none) is
# not Kiln and is left alone.
KILN = "kiln"                   # a complete source file: compiled, maybe run
FRAGMENT = "kiln-fragment"      # an excerpt: shown, never compiled
EXPR = "kiln-expr"              # statements wrapped in the template kernel
KILN_LANGS = (KILN, FRAGMENT, EXPR)

MARKER_KINDS = ("not-checked", "compile", "expect-error", "run", "template")

# An environment in which `dslc run` finds no GPU driver, so that every run is on the
# interpreter whatever the machine has (the runs pass --device interp as well).
NO_DRIVER_ENV = {"KILN_CUDA_LIBRARY": "/nonexistent/libcuda.so.1",
                 "KILN_ZE_LIBRARY": "/nonexistent/libze_loader.so.1"}

# The line of the template that an example replaces.
TEMPLATE_SLOT = "// example"

TIME_LIMIT_S = 120


@dataclass
class Marker:
    kind: str       # one of MARKER_KINDS
    value: str      # the text after "kind:", stripped (several lines for run)
    line: int       # where the comment starts (1-based)


@dataclass
class Block:
    path: str                   # the page, as given
    rel: str                    # the page relative to the repository (for messages)
    line: int                   # the opening fence (1-based)
    lang: str                   # the fence's language, "" when none
    text: str                   # the contents, the fence's indentation removed
    markers: List[Marker] = field(default_factory=list)

    @property
    def where(self):
        return "%s:%d" % (self.rel, self.line)

    @property
    def first_line(self):
        """The page line of the block's first line of code."""
        return self.line + 1

    def markers_of(self, kind):
        return [m for m in self.markers if m.kind == kind]


@dataclass
class Heading:
    level: int
    text: str
    line: int


@dataclass
class Page:
    path: str
    rel: str
    lines: List[str]
    blocks: List[Block]
    headings: List[Heading]
    errors: List[str]           # markers that belong to no block, malformed markers


def rel_path(path):
    full = os.path.abspath(path)
    r = os.path.relpath(full, REPO)
    return full if r.startswith("..") else r


_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)[^`]*$")
_HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_MARKER = re.compile(r"^(?P<kind>[a-z][a-z-]*)\s*:(?P<value>.*)$", re.S)


def parse_marker(comment, line):
    """The marker a comment's text (between <!-- and -->) holds, or None."""
    m = _MARKER.match(comment.strip())
    if not m or m.group("kind") not in MARKER_KINDS:
        return None
    return Marker(m.group("kind"), m.group("value").strip(), line)


def read_page(path):
    """The page's fenced blocks, with their markers, and its headings."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    rel = rel_path(path)
    blocks, headings, errors = [], [], []
    pending = []                # markers seen since the last text line
    unknown = []                # comments since then that look like markers but are not
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        fence = _FENCE.match(line)
        if fence:
            indent = len(fence.group("indent"))
            ch, width = fence.group("fence")[0], len(fence.group("fence"))
            body = []
            j = i + 1
            while j < len(lines):
                s = lines[j].strip()
                if s and set(s) == {ch} and len(s) >= width:
                    break
                # Content lines lose at most the fence's own indentation.
                text = lines[j]
                k = 0
                while k < indent and k < len(text) and text[k] == " ":
                    k += 1
                body.append(text[k:])
                j += 1
            lang = fence.group("info").strip()
            if lang in KILN_LANGS:
                for word, at in unknown:
                    errors.append("%s:%d: '%s:' is no marker (the markers are %s)" % (
                        rel, at, word, ", ".join(k + ":" for k in MARKER_KINDS)))
            unknown = []
            block = Block(path, rel, i + 1, lang, "\n".join(body) + "\n", pending)
            if pending and lang not in KILN_LANGS:
                errors.append("%s:%d: the marker%s before this ```%s block belong%s to no Kiln block" % (
                    rel, i + 1, "s" if len(pending) > 1 else "", lang or "", "" if len(pending) > 1 else "s"))
            pending = []
            blocks.append(block)
            i = j + 1
            continue
        if stripped.startswith("<!--"):
            start = i
            text = stripped[4:]
            while "-->" not in text and i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
            if "-->" not in text:
                errors.append("%s:%d: an HTML comment that never ends" % (rel, start + 1))
                break
            comment, after = text.split("-->", 1)
            marker = parse_marker(comment, start + 1)
            word = _MARKER.match(comment.strip())
            if not marker and word and re.fullmatch(r"[a-z]+(-[a-z]+)*", word.group("kind")):
                unknown.append((word.group("kind"), start + 1))   # a misspelt marker?
            if marker:
                if after.strip():
                    errors.append("%s:%d: text after the %s marker's '-->' on the same line" % (
                        rel, i + 1, marker.kind))
                pending.append(marker)
            i += 1
            continue
        if stripped:
            unknown = []
            for m in pending:
                errors.append("%s:%d: the %s marker is not followed by a ```kiln block (text comes first, "
                              "at line %d)" % (rel, m.line, m.kind, i + 1))
            pending = []
            h = _HEADING.match(line)
            if h and not line.startswith(" "):
                headings.append(Heading(len(h.group("hashes")), h.group("text"), i + 1))
        i += 1
    for m in pending:
        errors.append("%s:%d: the %s marker is not followed by a ```kiln block" % (rel, m.line, m.kind))
    return Page(path, rel, lines, blocks, headings, errors)


# ---- the kiln-expr template ----------------------------------------------------------

BUILTINS_MD = os.path.join(REPO, "docs", "builtins.md")


@dataclass
class Template:
    block: Block
    before: list        # the source lines up to the slot line
    after: list         # the source lines after it
    slot_line: int      # the slot's line in the source (1-based)
    indent: str         # the slot's indentation


def find_template(page):
    """The ```kiln block marked `<!-- template: kiln-expr -->` (docs/builtins.md)."""
    found = [b for b in page.blocks if any(m.kind == "template" and m.value == EXPR for m in b.markers)]
    if len(found) != 1:
        raise ValueError("%s must hold exactly one ```kiln block marked <!-- template: kiln-expr -->, found %d" % (
            page.rel, len(found)))
    block = found[0]
    lines = block.text.split("\n")
    slots = [k for k, l in enumerate(lines) if l.strip() == TEMPLATE_SLOT]
    if len(slots) != 1:
        raise ValueError("%s: the kiln-expr template needs exactly one line '%s' where examples go" % (
            block.where, TEMPLATE_SLOT))
    k = slots[0]
    indent = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
    return Template(block, lines[:k], lines[k + 1:], k + 1, indent)


def wrap_example(template, example, example_block):
    """The template with `example` in a block of its own at the slot (so that its names
    may shadow the template's), and where each of its lines comes from: a list whose
    entry L-1 is the (page, line, columns added in front) of source line L."""
    body = example.rstrip("\n").split("\n")
    if body:
        # A last line without its `;` is an expression statement: add the `;` (before a
        # trailing comment, if any).
        code, sep, comment = body[-1].partition("//")
        if code.strip() and not code.rstrip().endswith((";", "}")) and '"' not in code:
            body[-1] = code.rstrip() + ";" + (" " + sep + comment if sep else "")
    t = template.block
    before, after = template.before, template.after
    out = before + [template.indent + "{"] + [template.indent + "    " + l for l in body] + \
        [template.indent + "}"] + after
    shift = len(template.indent) + 4
    where = [(t.rel, t.first_line + k, 0) for k in range(len(before))]
    slot = (t.rel, t.first_line + template.slot_line - 1, 0)
    where += [slot] + [(example_block.rel, example_block.first_line + k, shift) for k in range(len(body))] + [slot]
    where += [(t.rel, slot[1] + 1 + k, 0) for k in range(len(after))]
    return "\n".join(out) + "\n", where


def block_lines(block):
    """Where each line of a block's own source is on its page."""
    return [(block.rel, block.first_line + k, 0) for k in range(block.text.count("\n") + 1)]


# ---- running dslc ---------------------------------------------------------------------

def find_dslc(explicit):
    """The compiler: --dslc (a file, or a build folder holding dslc), else $KILN_DSLC,
    else build/tools/dslc, else dslc on PATH. An absolute path, since the checks run it
    from temporary folders."""
    def absolute(p):
        return os.path.abspath(p) if os.sep in p else (shutil.which(p) or p)
    if explicit:
        inner = os.path.join(explicit, "dslc")
        return absolute(inner if os.path.isdir(explicit) and os.path.isfile(inner) else explicit)
    if os.environ.get("KILN_DSLC"):
        return absolute(os.environ["KILN_DSLC"])
    for p in (os.path.join(REPO, "build", "tools", "dslc"), shutil.which("dslc")):
        if p and os.path.isfile(p):
            return os.path.abspath(p)
    return "dslc"


@dataclass
class Result:
    argv: list
    rc: Optional[int]           # None: timed out
    stdout: str
    stderr: str

    def output(self):
        return (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).strip()


def run(argv, cwd, timeout=TIME_LIMIT_S):
    env = dict(os.environ, **NO_DRIVER_ENV)
    for attempt in range(20):
        try:
            p = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                               timeout=timeout, env=env, errors="replace")
            return Result(argv, p.returncode, p.stdout, p.stderr)
        except subprocess.TimeoutExpired as e:
            def text(b):
                return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")
            return Result(argv, None, text(e.stdout), text(e.stderr))
        except OSError as e:
            # A rebuild may be relinking dslc ("text file busy"): try again for a moment.
            if attempt == 19 or not os.path.exists(str(argv[0])):
                return Result(argv, 127, "", "cannot run %s: %s" % (argv[0], e))
            time.sleep(0.5)
    raise AssertionError("unreachable")


def include_flags(page_path):
    """-I folders for imports in snippets: the page's folder and the repository."""
    return ["-I", os.path.dirname(os.path.abspath(page_path)), "-I", REPO]


def relocate(text, source, where):
    """Diagnostics about `source` (a temporary file) pointed at the page lines it came
    from (`where`, as block_lines and wrap_example give it)."""
    def fix(m):
        line, col = int(m.group(1)), int(m.group(2))
        if 1 <= line <= len(where):
            rel, page_line, shift = where[line - 1]
            return "%s:%d:%d" % (rel, page_line, max(1, col - shift))
        return m.group(0)
    return re.sub(re.escape(source) + r":(\d+):(\d+)", fix, text)


def error_codes(text):
    return set(re.findall(r"error\[(E\d{4})\]", text))


def indent(text, by="    "):
    return "\n".join(by + l for l in text.rstrip().split("\n"))
