#!/usr/bin/env python3
"""List the global loads every PDL kernel issues before its dependency wait, from the SASS.

Why (bench/notes/attn-decode.md, fifteenth session): under programmatic dependent launch a kernel
starts while the previous one still runs, and `griddepcontrol.wait` (SASS: ACQBULK) is what
orders its reads after the producer's writes. ptxas treats a non-coherent load (`__ldg`,
`ld.global.nc`, a `const __restrict__` pointer: LDG...CONSTANT) as reading memory that never
changes during the kernel, and moves it above the ACQBULK when its address is ready: the dropped
kernels.early_params quantize read the GLU output before the GLU had finished that way. Before the
wait a decode kernel may only read what no kernel of the step writes (weights, the staged
position, RoPE factors, constant tables) or copy cache rows it never uses from there.

This lists, per kernel with an ACQBULK, the loads that some path from the entry reaches before any,
and flags non-coherent loads that are not the mmvs weight loads (.NA, L1::no_allocate) and whose
address does not come from a constant bank of the compiler (c[0x4]: libdevice tables). It reads
the device code of the build's object files with cuobjdump (-xelf) and nvdisasm (both ship with
the CUDA toolkit; on machines without them, PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
wheels have them: pass their paths). Exit 1 when something is flagged.

  scripts/check-pdl-loads.py BUILD_DIR [--cuobjdump PATH] [--nvdisasm PATH] [--verbose]
"""
import argparse
import collections
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

LOAD = re.compile(r"\b(LDG\S*|LDGSTS\S*)")


def kernels_of(sass_text):
    """(name, [line, ...]) for every .text section: instructions and labels (".L_x_1:")."""
    name, body = None, []
    for line in sass_text.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            if name:
                yield name, body
            name, body = m.group(1), []
            continue
        ins = re.sub(r"/\*[0-9a-f]*\*/", "", line).strip()
        if not name or not ins:
            continue
        if re.match(r"\.L\w*:$", ins) or not ins.startswith("."):
            body.append(ins)
    if name:
        yield name, body


def unwaited(body):
    """Indices of the instructions that some path from the kernel's entry reaches without passing
    an ACQBULK (a forward dataflow over the branches and labels of the listing)."""
    labels = {ins[:-1]: i for i, ins in enumerate(body) if ins.endswith(":")}
    # state[i]: True if some path reaches instruction i with no wait behind it
    state = [False] * (len(body) + 1)
    state[0] = True
    changed = True
    while changed:
        changed = False
        for i, ins in enumerate(body):
            if not state[i]:
                continue
            out = "ACQBULK" not in ins
            succ = []
            m = re.search(r"BRA\S*\s+`\((\.L\w+)\)", ins)
            pred = ins.startswith("@")
            if m:
                succ.append(labels.get(m.group(1)))
                if pred:
                    succ.append(i + 1)
            elif re.search(r"\b(EXIT|RET)\b", ins):
                if pred:
                    succ.append(i + 1)
            else:
                succ.append(i + 1)
            for j in succ:
                if j is not None and j <= len(body) and out and not state[j]:
                    state[j] = True
                    changed = True
    return {i for i in range(len(body)) if state[i]}


def from_constant_table(body, i, window=16):
    """Whether a compiler constant bank (c[0x4]: libdevice tables) appears in the few instructions
    before load i (where its address is formed)."""
    return any("c[0x4]" in body[j] for j in range(max(0, i - window), i))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump")
    ap.add_argument("--nvdisasm", default=shutil.which("nvdisasm") or "/usr/local/cuda/bin/nvdisasm")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--cubin", nargs="*", default=[], help="check these cubins instead of the build's objects")
    a = ap.parse_args()
    for tool in (a.cuobjdump, a.nvdisasm):
        if not pathlib.Path(tool).exists():
            sys.exit(f"check-pdl-loads: {tool} not found (pass --cuobjdump / --nvdisasm)")
    objs = [] if a.cubin else sorted(pathlib.Path(a.build_dir).glob("lib/CMakeFiles/memra_backend_cuda.dir/**/*.cu.o"))
    if not objs and not a.cubin:
        sys.exit(f"check-pdl-loads: no CUDA objects under {a.build_dir}")
    flagged, summary = [], collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for o in objs:
            # objects without device code make cuobjdump fail: nothing to extract from them
            subprocess.run([a.cuobjdump, "-xelf", "all", str(o.resolve())], cwd=tmp, check=False, capture_output=True)
        for c in a.cubin:
            shutil.copy(c, pathlib.Path(tmp) / pathlib.Path(c).name)
        for cubin in sorted(pathlib.Path(tmp).glob("*.cubin")):
            sass = subprocess.run([a.nvdisasm, "-c", str(cubin)], check=True, capture_output=True, text=True).stdout
            for name, body in kernels_of(sass):
                if not any("ACQBULK" in x for x in body):
                    continue
                # Loads some path reaches before any wait (the dropped early quantize had its wait on
                # two paths, and the hoisted load sat after the first in program order).
                early = unwaited(body)
                kinds = collections.Counter()
                for i, ins in enumerate(body):
                    if i not in early:
                        continue
                    m = LOAD.search(ins)
                    if not m:
                        continue
                    op = m.group(1)
                    kinds[op] += 1
                    nc = ".CONSTANT" in op and ".NA" not in op
                    if nc and not from_constant_table(body, i):
                        flagged.append(f"{cubin.stem}: {name}: {ins}")
                summary[(cubin.stem, tuple(sorted(kinds.items())))] += 1
    for (unit, kinds), n in sorted(summary.items()):
        if a.verbose or kinds:
            desc = ", ".join(f"{k} x{v}" for k, v in kinds) or "none"
            print(f"{unit}: {n} kernel(s) with pre-wait loads: {desc}")
    if flagged:
        print(f"\n{len(flagged)} non-coherent load(s) before a dependency wait:")
        for f in flagged:
            print("  " + f)
        return 1
    if not summary:
        sys.exit("check-pdl-loads: no kernel with a dependency wait found")
    print("\nno non-coherent load of non-constant data before any dependency wait")
    return 0


if __name__ == "__main__":
    sys.exit(main())
