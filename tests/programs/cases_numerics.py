#===- cases_numerics.py - Cases behind each claim of docs/numerics.md ------------===#
#
# Every behaviour docs/numerics.md states (wrapping narrowing, NaN order, saturating f8,
# ...) is a case here, run on the interpreter and every backend like the rest of the
# corpus, so that the page cannot drift from what Kiln does.
#
#===---------------------------------------------------------------------------===#


def register(add):
    """Adds this file's cases through cases.py's add()."""
