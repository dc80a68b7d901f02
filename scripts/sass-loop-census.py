#!/usr/bin/env python3
"""Static instruction census of a kernel's loops, from its SASS (no GPU needed).

usage: scripts/sass-loop-census.py OBJECT.o FUNCTION-REGEX [--min N] [--top K]

Disassembles OBJECT (cuobjdump -sass, from PATH or /opt/memra-deps/sass-tools), picks the one
function whose mangled name matches FUNCTION-REGEX (an error if none or several do), and reports
every loop, i.e. every backward branch, whose body holds at least N instructions (default 100):
its address range, its static instruction count and the K most frequent opcodes. A decode kernel
that is bound by its instruction count or by one warp's dependent chain (bench/notes/attn-stage16.md)
moves with the static count of its hot loop, which this measures on a build machine without a GPU;
the device measurements still decide.
"""
import collections
import os
import re
import shutil
import subprocess
import sys


def cuobjdump():
    for cand in (shutil.which("cuobjdump"), "/opt/memra-deps/sass-tools/cuobjdump", "/usr/local/cuda/bin/cuobjdump"):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit("sass-loop-census: cuobjdump not found (scripts/bootstrap.sh installs it)")


def functions(tool, obj):
    out = subprocess.run([tool, "-res-usage", obj], capture_output=True, text=True, check=True).stdout
    return re.findall(r"Function (\S+):", out)


def sass(tool, obj, fn):
    out = subprocess.run([tool, "-sass", "-fun", fn, obj], capture_output=True, text=True, check=True).stdout
    ins = []
    for line in out.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    return ins


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    return text.split()[0].split(".")[0] if text else "?"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    opts = dict(zip(argv[1:], argv[2:]))
    if len(args) < 2:
        sys.exit(__doc__)
    obj, pattern = args[0], args[1]
    min_n, top = int(opts.get("--min", 100)), int(opts.get("--top", 12))
    tool = cuobjdump()
    names = [f for f in functions(tool, obj) if re.search(pattern, f)]
    if len(names) != 1:
        sys.exit(f"sass-loop-census: {len(names)} functions match {pattern!r}" + "".join(f"\n  {n}" for n in names[:20]))
    ins = sass(tool, obj, names[0])
    print(f"{names[0]}: {len(ins)} instructions")
    # Past the last EXIT sit the out-of-line paths (divergent shuffles' slow paths, calls) that
    # branch back into the body: those are not loops.
    last_exit = max((a for a, t in ins if opcode(t) == "EXIT"), default=ins[-1][0] if ins else 0)
    for addr, text in ins:
        if addr > last_exit:
            break
        m = re.search(r"\bBRA\b(?:\s+\S+,)?\s+(0x[0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [t for a, t in ins if target <= a <= addr]
        if len(body) < min_n:
            continue
        hist = collections.Counter(opcode(t) for t in body).most_common(top)
        print(f"loop 0x{target:x}..0x{addr:x}: {len(body)} instructions; " + ", ".join(f"{k} {v}" for k, v in hist))


if __name__ == "__main__":
    main(sys.argv)
