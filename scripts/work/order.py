#!/usr/bin/env python3
"""The functions of BIN that ran in callgrind's traces, most instructions first: a linker
symbol-ordering file (scripts/pgo.sh). The traces are callgrind's, written with
`--compress-strings=no --demangle=no`, so a function is named by its symbol.

    order.py BIN TRACE... > order.txt

A function counts if BIN defines a code symbol of its name: callgrind puts the code of
BIN's sections other than `.text` (`.text.hot`, `.text.unlikely`) in an unknown object.
"""
import collections
import re
import subprocess
import sys


def code_symbols(binary):
    """The names of `binary`'s code symbols (`nm`: t, T, w, W)."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True)
    rows = (line.split() for line in out.stdout.splitlines())
    return {r[2] for r in rows if len(r) == 3 and r[1] in "tTwW"}


def costs(path, into):
    """Adds each function's own instructions in the trace at `path` to `into`."""
    fn = None
    skip = False
    with open(path, errors="replace") as f:
        for line in f:
            if skip:  # the inclusive cost of the call just named: not the caller's own
                skip = False
            elif line.startswith("fn="):
                # `name'2` is callgrind's mark of a recursion's depth, not part of the symbol.
                fn = re.sub(r"'[0-9]+$", "", line[3:].strip())
                into.setdefault(fn, 0)
            elif line.startswith("calls="):
                skip = True
            elif fn and line[:1] in "0123456789+-*":
                parts = line.split()
                if len(parts) >= 2:
                    into[fn] += int(parts[1])


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: order.py BIN TRACE...")
    ran = collections.Counter()
    for path in sys.argv[2:]:
        costs(path, ran)
    mine = code_symbols(sys.argv[1])
    order = [fn for fn, _ in ran.most_common() if fn in mine]
    if not order:
        sys.exit(f"order.py: no function of {sys.argv[1]} in the traces")
    print("\n".join(order))
    print(f"order.py: {len(order)} functions of {sys.argv[1]} ran", file=sys.stderr)


main()
