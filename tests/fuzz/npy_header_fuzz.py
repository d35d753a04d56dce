#!/usr/bin/env python3
"""Differential fuzz test of Kiln's .npy reader against NumPy's.

Writes a few thousand .npy files whose headers start from what NumPy writes and are
then mutated (duplicate, extra and missing keys, quoting, spacing and comments,
non-ASCII text, truncation, dimension counts, negative dimensions, Python 2 'L'
suffixes, bools, nested values, padding, header lengths, format versions 1.0-3.0),
asks NumPy (numpy.load with allow_pickle=False) and Kiln (kiln-npy-probe, which calls
readNpy) about each, and compares:

  - Kiln must never read a file NumPy refuses;
  - where both read a file, they must agree on the dtype, the shape and the data;
  - where NumPy reads a file Kiln refuses, Kiln's reason must be one it documents
    (ALLOWED_REFUSALS: a dtype or layout Kiln does not support, or Python syntax no
    writer produces).

The seed is fixed unless --seed is given, so a failure repeats. Exits 77 (skipped)
when NumPy is missing.

usage: npy_header_fuzz.py --probe PATH/kiln-npy-probe [--count N] [--seed S] [--keep DIR]
"""

import argparse
import io
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import warnings

try:
    import numpy
    from numpy.lib import format as npformat
except ImportError:
    print("npy header fuzz: NumPy is not installed; skipped")
    sys.exit(77)

# Kiln's reasons for refusing a file NumPy reads, as its messages word them.
ALLOWED_REFUSALS = {
    "unsupported dtype": r"unsupported dtype",
    "big-endian": r"big-endian arrays are not supported",
    "Fortran order": r"Fortran-order arrays are not supported",
    "negative dimension": r"has a negative dimension",
    "escape in a string": r"an escape sequence",
    "string prefix": r"a string prefix",
    "triple-quoted string": r"a triple-quoted string",
    "line continuation": r"a line continuation",
    "indented dict": r"the header dict is indented",
    "indented last line": r"the header ends in an indented line",
    "deep nesting": r"nested more than",
    "array too large": r"array too large",
}

# ---- the arrays NumPy writes ---------------------------------------------------------

SUPPORTED_DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "|V1",
                    "|V2"]
OTHER_DTYPES = [">f4", ">i2", "<c8", "|S3", "<U2", "|O", "<M8[s]", [("a", "<f4"), ("b", "<i2")]]
SHAPES = [(), (0,), (1,), (3,), (2, 3), (4, 0, 2), (1, 2, 1, 3), (2,) * 5]


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return str(h)


def base_cases(rng):
    """(version, descr repr, shape, fortran) of arrays NumPy can write, with its own bytes."""
    cases = []
    for dtype in SUPPORTED_DTYPES + OTHER_DTYPES:
        for shape in SHAPES:
            for version in (1, 2, 3):
                try:
                    dt = numpy.dtype(dtype)
                    arr = numpy.zeros(shape, dt)
                    if dt.kind in "biuf":
                        arr = numpy.arange(arr.size, dtype=numpy.int64).reshape(shape).astype(dt)
                except (TypeError, ValueError):
                    continue
                fortran = False
                if len(shape) >= 2 and rng.random() < 0.1:
                    arr = numpy.asfortranarray(arr)
                    fortran = True
                cases.append((version, arr, fortran))
    return cases


def numpy_file_bytes(version, arr):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        npformat.write_array(buf, arr, version=(version, 0), allow_pickle=True)
    return buf.getvalue()


# ---- building and mutating headers ---------------------------------------------------

GOOD_SEPS = ["", " ", "  ", "\t", "\n", "\r\n", "\f", " # note\n", "\n\n    "]
BAD_SEPS = ["\r", "\\\n", "\v", "\x00", "\u00a0", "\u2028", "\ufeff", "#", " x ", ";", "\x1b[31m"]

DESCR_VARIANTS = ["'<f4'", "'|f4'", "'=f4'", "'f4'", "'>f4'", "'<f04'", "'<V2'", "'V2'", "'|V0'", "'|V2'",
                  "'float32'", "'<f16'", "'<i3'", "'<c8'", "'|O'", "' <f4'", "'<f4 '", '"<f8"', "'<' 'f4'",
                  "'''<f4'''", "'\\x3cf4'", "u'<f4'", "b'<f4'", "r'<f4'", "('<f4')", "['<f4']", "5", "None",
                  "'<f4", "'<f\u00e94'", "'<i8'", "'|b1'", "'<b1'", "'|V1'", "'<u8'", "'=i2'", "\"<f4'",
                  "[('a', '<f4')]", "'<f4' # c", "'<f2'", "'|i1'", "'<V01'", "'V99'"]
FORTRAN_VARIANTS = ["False", "True", "0", "1", "'False'", "None", "(False)", "False,", "Fals", "FALSE", "false",
                    "not True", "True if 1 else False", "-False", "(False,)"]
INT_SPELLINGS = ["3", "3L", "3 L", "3LL", "3L L", "3l", "0x3", "0X3L", "0o3", "0b11", "0b_11", "3_0", "3__0",
                 "03", "00", "0_0", "0L", "3.0", "3e0", "3j", "+3", "- 3", "-0", "-(3)", "--3", "+-3", "(3)",
                 "((3))", "True", "False", "3_", "0x", "0xg", "2**2", "1+2", "3 # c\n", "3\n", "3\nL",
                 str(2 ** 40), str(2 ** 63), str(2 ** 64), str(2 ** 70), "-1", "-2", "3Lx", "3 Lx", "3L5"]

OVERWRITTEN_VALUES = ["1.5", "3e0", ".5", "5.", "1_0.5", "2j", "1+2j", "-1-2.5j", "1+2", "2j+1", "(1+2j)+3j",
                      "-(1+2j)", "+-1", "{1, 2}", "{1,}", "set()", "set ( )", "set(\n)", "set([1])", "...", ". . .",
                      "{[1]: 2}", "{(1, [2]): 3}", "{{1}}", "{(1, (2,)): 3}", "{1: {2: [3]}}", "[{}]", "b'x'", "None",
                      "frozenset()", "0x1.5", "1e", "1e+", "1.e5", "09.5", "09", "09j", "1__0.5", "1._5", "-0.0",
                      "1if 1else 2", "1 if 1 else 2", "[1for x in y]", "lambda: 1", "x", "__import__('os')",
                      "'a' 'b'", "(-3)+2j", "1 + (2j)", "1 + -2j", "True+2j", "....", "{1: 2, 3}", "{1, 2: 3}",
                      "{**{}}", "(1, [2])", "{(1, {2}): 3}", "1L", "1.5L", "2jL", "0xffL", "[1, 2,]", "(1, 2,)",
                      "{'a': (1, {'b': [2, 3.5, -4j]}),}", "()", "[]", "{}", "'\u00e9'", "'x' # c\n", "-(-1)",
                      "- 1.5e-3", "1e5j", "1E+5J", "0o777", "0b", "0b2", "1_", "True + 1j", "None+1j", "1-2j-3j"]


def shape_text(dims, rng):
    """A tuple spelling of `dims` (ints or spellings), with the separators Python takes."""
    parts = [str(d) for d in dims]
    if not parts:
        return "()"
    sep = rng.choice([", ", ",", " , ", ",\n", ", "])
    body = sep.join(parts)
    if len(parts) == 1 or rng.random() < 0.3:
        body += ","
    return "(" + body + ")"


def render(entries, seps, trailing_comma=True, wrap=("", "")):
    """The dict text of [(key, value)] with separators from `seps`, NumPy's layout when
    every separator is the writer's."""
    def sep(i):
        return seps[i % len(seps)] if seps else ""
    pieces = []
    for i, (key, value) in enumerate(entries):
        pieces.append(sep(3 * i) + key + sep(3 * i + 1) + ":" + (sep(3 * i + 2) or " ") + value)
    text = "{" + ", ".join(pieces) + (", " if trailing_comma and entries else "") + "}"
    return wrap[0] + text + wrap[1]


def encode_header(text, version):
    """The header's bytes: UTF-8 for format 3.0, latin-1 before (UTF-8 bytes where the
    text has characters latin-1 lacks, which NumPy then reads as latin-1)."""
    if version == 3 or any(ord(c) > 255 for c in text):
        return text.encode("utf8")
    return text.encode("latin1")


def pad(text, version, how):
    """NumPy's padding (to a multiple of 64 bytes with the preamble, ending in a
    newline) or a variation."""
    pre = 10 if version == 1 else 12
    if how == "numpy":
        total = pre + len(encode_header(text, version)) + 1
        return text + " " * ((64 - total % 64) % 64) + "\n"
    if how == "huge":  # exactly as long as NumPy reads
        return text + " " * (npformat._MAX_HEADER_SIZE - len(text) - 1) + "\n"
    if how == "too-huge":
        return text + " " * (npformat._MAX_HEADER_SIZE - len(text)) + "\n"
    return text + PAD_TAILS[how]


PAD_TAILS = {"none": "", "no-newline": " " * 20, "tabs": "\t\t\n", "newlines": "\n\n\n", "comment": "  # padding\n",
             "formfeed": "\f\n", "cr": "\r", "crlf": "  \r\n", "junk": "   x\n", "blank-then-junk": "\n  \n 5\n",
             "indented-end": "\n  ", "formfeed-end": "\n \f"}
PAD_KINDS = ["numpy"] * 12 + sorted(PAD_TAILS) + ["huge", "too-huge"]

JUNK = ["'", '"', "(", ")", "{", "}", "[", "]", ",", ":", "#", "\\", "L", " ", "\n", "\r", "\t", "\f", "\x00",
        "\u00e9", "\u00ff", "\u20ac", "\U0001f600", "\ufeff", "True", "None", "0", "-", "+", ".", "'descr'", "**"]


def text_mutation(text, rng):
    """A small random edit of the header text."""
    kind = rng.randrange(5)
    if not text:
        return rng.choice(JUNK)
    i = rng.randrange(len(text) + 1)
    if kind == 0:  # insert
        return text[:i] + rng.choice(JUNK) + text[i:]
    if kind == 1:  # delete
        return text[:i] + text[i + 1:]
    if kind == 2:  # replace
        return text[:i] + rng.choice(JUNK) + text[i + 1:]
    if kind == 3:  # truncate
        return text[:i]
    # swap quotes
    return text.replace("'", '"', rng.randrange(1, 7))


SHAPE = "<the shape, spelled once the dimensions are chosen>"


def mutated_case(rng, base):
    """One mutated file: (bytes, a note of what was done)."""
    version, arr, fortran = base
    notes = []
    descr = repr(npformat.dtype_to_descr(arr.dtype))
    dims = list(arr.shape)
    entries = [["'descr'", descr], ["'fortran_order'", repr(fortran)], ["'shape'", SHAPE]]
    seps = [" "] if rng.random() < 0.5 else []
    trailing = True
    wrap = ["", ""]
    pad_kind = "numpy"
    data = None
    raw_version = (version, 0)
    length_delta = 0
    byte_edits = []

    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        m = rng.randrange(23)
        if m == 0:
            # A key again, with another value: NumPy takes the last one.
            key = rng.choice(["'descr'", "'shape'", "'fortran_order'"])
            value = {"'descr'": rng.choice(DESCR_VARIANTS[:12] + ["'<f8'", "'<f4'", "'<i4'"]),
                     "'shape'": shape_text([rng.choice([0, 1, 2, 3])], rng),
                     "'fortran_order'": rng.choice(["False", "True"])}[key]
            entries.insert(rng.randrange(len(entries) + 1), [key, value])
            notes.append("duplicate " + key)
        elif m == 1:
            entries.insert(rng.randrange(len(entries) + 1),
                           [rng.choice(["'extra'", "'Descr'", "'descr '", "1", "None", "('descr',)", "b'shape'",
                                        "'\u00e9'", '"shape2"', "True"]), rng.choice(["0", "'x'", "()"])])
            notes.append("extra key")
        elif m == 2 and entries:
            del entries[rng.randrange(len(entries))]
            notes.append("missing key")
        elif m == 3:
            rng.shuffle(entries)
            notes.append("keys reordered")
        elif m == 4:
            for e in entries:
                if e[0] == "'descr'":
                    e[1] = rng.choice(DESCR_VARIANTS)
            notes.append("descr variant")
        elif m == 5:
            for e in entries:
                if e[0] == "'fortran_order'":
                    e[1] = rng.choice(FORTRAN_VARIANTS)
            notes.append("fortran_order variant")
        elif m == 6:
            n = rng.choice([0, 1, 2, 31, 32, 32, 33, 33, 40, 64, 101])
            dims = [rng.choice([1, 1, 1, 0]) if i >= 3 else rng.choice([1, 2, 3]) for i in range(n)]
            notes.append("%d dims" % n)
        elif m == 7:
            if not dims:
                dims = [3]
            dims[rng.randrange(len(dims))] = rng.choice(INT_SPELLINGS)
            notes.append("dimension spelling")
        elif m == 8:
            for e in entries:
                if e[0] == "'shape'":
                    e[1] = rng.choice(["[3]", "{3}", "3", "'3'", "((3,),)", "(((((3,)))))", "((3),)", "(,)",
                                       "(3,,)", "(3 4)", "( )", "(3,)(4,)", "(3,) + (1,)", "tuple()",
                                       "(" * 120 + "3," + ")" * 120, "(" * 60 + "3," + ")" * 60,
                                       "((" + "(" * 30 + "3" + ")" * 30 + "),)", "(None,)", "({},)",
                                       "([3],)", "(-1,)", "(-1, 3)", "(3, -0)", "(True, 2)", "(False,)"])
            notes.append("nested shape")
        elif m == 9:
            seps = [rng.choice(GOOD_SEPS) for _ in range(rng.randrange(1, 9))]
            notes.append("spacing")
        elif m == 10:
            seps = [rng.choice(GOOD_SEPS + BAD_SEPS) for _ in range(rng.randrange(1, 9))]
            notes.append("odd spacing")
        elif m == 11:
            trailing = not trailing
            notes.append("trailing comma")
        elif m == 12:
            wrap = rng.choice([["(", ")"], ["\n", ""], ["  ", ""], ["\t", ""], ["\n  ", ""], ["# c\n", ""],
                               ["\f", ""], ["\f ", ""], [" \f", ""], ["\ufeff", ""], ["", ","], ["", " x"],
                               ["", "\u00e9"], ["", "\u00a0"], ["", " # \u00e9 c"], ["", "\n\\\n"],
                               ["[", "]"], ["", "}"], ["{", "}"], ["(", ",)"], ["", "\x00"], ["\r\n", ""],
                               ["", "\n#"], ["\t \n", ""], [" \n\f", ""], ["\\\n", ""]])
            notes.append("wrapped %r" % (wrap,))
        elif m == 13:
            pad_kind = rng.choice(PAD_KINDS)
            notes.append("padding " + pad_kind)
        elif m == 14:
            for e in entries:
                if rng.random() < 0.5:
                    e[0] = e[0].replace("'", '"')
                if rng.random() < 0.5:
                    e[1] = e[1].replace("'", '"')
            notes.append("double quotes")
        elif m == 15:
            raw_version = rng.choice([(1, 0), (2, 0), (3, 0), (0, 0), (4, 0), (1, 1), (3, 1), (255, 0), (2, 5)])
            notes.append("version %d.%d" % raw_version)
        elif m == 16:
            length_delta = rng.choice([-64, -10, -2, -1, 1, 2, 16, 1000])
            notes.append("length %+d" % length_delta)
        elif m == 17:
            data = rng.choice(["short", "long", "empty"])
            notes.append("data " + data)
        elif m == 18:
            byte_edits.append(rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe9", b"\x80", b"\xc3",
                                          b"\xf4\x90\x80\x80", b"\xef\xbb\xbf", b"\xc3\xa9", b"\xe2\x80\xa8"]))
            notes.append("raw bytes")
        elif m == 19:
            for e in entries:
                if e[0] == "'descr'":
                    e[0] = rng.choice(["'desc' 'r'", "'''descr'''", "u'descr'", "'de\\x73cr'", "('descr')",
                                       "'descr'\n", "\"descr\"", "'descr' # k\n"])
            notes.append("key spelling")
        elif m == 20:
            # Any literal, even one NumPy could not use, as a value a later key replaces:
            # NumPy evaluates it all the same.
            key = rng.choice(["'descr'", "'shape'", "'fortran_order'"])
            entries.insert(0, [key, rng.choice(OVERWRITTEN_VALUES)])
            notes.append("overwritten " + key)
        else:
            notes.append("text edit")
            byte_edits.append(None)

    for e in entries:
        if e[1] == SHAPE:
            e[1] = shape_text(dims, rng)
    text = render(entries, seps, trailing, wrap)
    for edit in [e for e in byte_edits if e is None]:
        text = text_mutation(text, rng)
    text = pad(text, version, pad_kind)
    header = encode_header(text, version)
    for edit in [e for e in byte_edits if e is not None]:
        i = rng.randrange(len(header) + 1)
        header = header[:i] + edit + header[i:]

    major, minor = raw_version
    length = max(0, len(header) + length_delta)
    if major == 1:
        length = min(length, 0xFFFF)
        preamble = b"\x93NUMPY" + bytes([major, minor]) + struct.pack("<H", length)
    else:
        preamble = b"\x93NUMPY" + bytes([major % 256, minor]) + struct.pack("<I", length)

    body = bytes(arr.tobytes(order="F" if fortran else "C"))
    # Data for the array NumPy reads from the mutated header, where that is small.
    try:
        framed = io.BytesIO(struct.pack("<H" if version == 1 else "<I", len(header)) + header)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            shape, _, dtype = npformat._read_array_header(framed, (version, 0))
        count = 1
        for d in shape:
            count *= d
        if 0 <= count * dtype.itemsize <= 1 << 16:
            body = bytes(rng.randrange(256) for _ in range(count * dtype.itemsize))
    except Exception:
        pass
    if data == "short" and body:
        body = body[:-rng.randrange(1, len(body) + 1)]
    elif data == "long":
        body += b"\x01" * rng.randrange(1, 9)
    elif data == "empty":
        body = b""
    return preamble + header + body, "; ".join(notes)


# ---- asking NumPy and Kiln ------------------------------------------------------------

def numpy_verdict(path):
    """What NumPy makes of the file: (True, dtype str, shape, fortran, bytes, fnv) or
    (False, reason)."""
    with warnings.catch_warnings():
        # Python warns of some mutants' syntax as it parses them.
        warnings.simplefilter("ignore")
        return numpy_verdict_unwarned(path)


def numpy_verdict_unwarned(path):
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            version = npformat.read_magic(f)
            npformat._check_version(version)
            shape, fortran, dtype = npformat._read_array_header(f, version)
            start = f.tell()
        count = 1
        for d in shape:
            count *= d
        if count * dtype.itemsize > max(size - start, 0) + (1 << 26):
            # numpy.load would try to allocate it all before finding the data short.
            return (False, "data shorter than the header claims")
        arr = numpy.load(path, allow_pickle=False)
        data = arr.tobytes(order="F" if fortran else "C")
        return (True, arr.dtype.str, list(arr.shape), bool(fortran), len(data), fnv1a(data))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # NumPy's refusals are of many types
        return (False, "%s: %s" % (type(e).__name__, str(e)[:100]))


def kiln_verdicts(probe, paths):
    out = []
    for i in range(0, len(paths), 500):
        batch = paths[i:i + 500]
        proc = subprocess.run([probe] + batch, stdout=subprocess.PIPE, check=True, timeout=60)
        lines = proc.stdout.decode().splitlines()
        assert len(lines) == len(batch), "the probe printed %d lines for %d files" % (len(lines), len(batch))
        out.extend(json.loads(line) for line in lines)
    return out


def compare(np_v, kiln_v):
    """None where they agree, else what is wrong; ("allowed", reason) for a documented
    refusal of a file NumPy reads."""
    np_ok = np_v[0]
    if kiln_v["ok"] and not np_ok:
        return "Kiln reads a file NumPy refuses (%s)" % np_v[1]
    if kiln_v["ok"]:
        _, dtype, shape, fortran, nbytes, fnv = np_v
        try:
            kiln_dtype = numpy.dtype(kiln_v["descr"]).str
        except TypeError:
            kiln_dtype = "?" + kiln_v["descr"]
        if fortran:
            return "Kiln reads a Fortran-order file"
        if (kiln_dtype, kiln_v["shape"], kiln_v["bytes"], kiln_v["fnv"]) != (dtype, shape, nbytes, fnv):
            return "different arrays: NumPy %s %s %d bytes, Kiln %s %s %d bytes%s" % (
                dtype, shape, nbytes, kiln_dtype, kiln_v["shape"], kiln_v["bytes"],
                "" if kiln_v["fnv"] == fnv else " (different data)")
        return None
    if not np_ok:
        return None
    for reason, pattern in ALLOWED_REFUSALS.items():
        if re.search(pattern, kiln_v["error"]):
            return ("allowed", reason)
    return "Kiln refuses a file NumPy reads as %s %s: %s" % (np_v[1], np_v[2], kiln_v["error"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", required=True, help="the kiln-npy-probe executable")
    ap.add_argument("--count", type=int, default=4000, help="how many mutated files (default 4000)")
    ap.add_argument("--seed", type=int, default=20240601, help="the random seed (fixed by default)")
    ap.add_argument("--keep", help="write the files here and keep them")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every allowed difference")
    args = ap.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        return run(args, args.keep)
    # Removed however the run ends.
    with tempfile.TemporaryDirectory(prefix="kiln-npy-fuzz-") as workdir:
        return run(args, workdir)


def run(args, workdir):
    """Writes the files into `workdir`, judges them and reports; the exit status."""
    rng = random.Random(args.seed)
    bases = base_cases(rng)
    paths, notes = [], []
    # Every file NumPy writes itself, unchanged, then the mutants.
    for i, (version, arr, fortran) in enumerate(bases):
        path = os.path.join(workdir, "numpy-%04d.npy" % i)
        with open(path, "wb") as f:
            f.write(numpy_file_bytes(version, arr))
        paths.append(path)
        notes.append("as NumPy writes it (%s %s, version %d.0)" % (arr.dtype.str, arr.shape, version))
    for i in range(args.count):
        contents, note = mutated_case(rng, rng.choice(bases))
        path = os.path.join(workdir, "mutant-%05d.npy" % i)
        with open(path, "wb") as f:
            f.write(contents)
        paths.append(path)
        notes.append(note)

    np_vs = [numpy_verdict(p) for p in paths]
    kiln_vs = kiln_verdicts(args.probe, paths)

    both_read = both_refused = 0
    allowed = {}
    failures = []
    for path, note, np_v, kiln_v in zip(paths, notes, np_vs, kiln_vs):
        verdict = compare(np_v, kiln_v)
        if verdict is None:
            if kiln_v["ok"]:
                both_read += 1
            else:
                both_refused += 1
        elif isinstance(verdict, tuple):
            allowed[verdict[1]] = allowed.get(verdict[1], 0) + 1
            if args.verbose:
                print("allowed: %s: %s [%s]" % (os.path.basename(path), kiln_v["error"], note))
        else:
            failures.append("%s: %s [%s]" % (os.path.basename(path), verdict, note))
        if path.startswith(os.path.join(workdir, "numpy-")) and np_v[0] and not kiln_v["ok"] \
                and np_v[1] in SUPPORTED_DTYPES and not np_v[3]:
            failures.append("%s: Kiln refuses a file NumPy wrote: %s" % (os.path.basename(path), kiln_v["error"]))

    for line in failures[:40]:
        print("FAIL " + line)
    if failures:
        kinds = {}
        for line in failures:
            kind = re.split(r" \(|:| as | \[", line.split(": ", 1)[1])[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        print("disagreements: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    print("npy header fuzz (seed %d): %d files (%d as NumPy writes them, %d mutants); both read %d, both refuse %d, "
          "Kiln refuses as documented %d (%s); %d disagreements"
          % (args.seed, len(paths), len(bases), args.count, both_read, both_refused, sum(allowed.values()),
             ", ".join("%s %d" % kv for kv in sorted(allowed.items())), len(failures)))
    print("%d passed, %d failed" % (len(paths) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
