#!/usr/bin/env python3
"""The stage graph as built (test layers.symbols).

Reads the file CMake writes for this test (one line a stage: its name, the
stages it sees, its object files) and checks, with nm, that each stage
calls only functions defined in itself or in the stages it sees: a call
into a later stage through a public header compiles, and this catches it.
With --docs FILE, also checks that the ```text block under "The stages
behind it" in that file draws the same graph as the build declares.
"""
import argparse
import subprocess
import sys


def read_layers(path):
    stages = []
    for line in open(path, encoding="utf-8"):
        if not line.strip():
            continue
        name, depends, sees, objects = line.rstrip("\n").split("|")
        stages.append((name, depends.split(";") if depends else [],
                       set(sees.split(";")) if sees else set(),
                       [o for o in objects.split(";") if o]))
    return stages


def undefined_symbols(nm, objects):
    out = subprocess.run([nm, "--undefined-only", "--format=just-symbols"] + objects,
                         check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines()
            if line.strip() and not line.strip().endswith(":")}


def defined_symbols(nm, objects):
    """(strong, weak): the symbols the objects define, by binding. Inline
    functions and templates are defined weak wherever they are used, so
    only strong definitions say which stage a function belongs to."""
    out = subprocess.run([nm, "--defined-only"] + objects, check=True,
                         capture_output=True, text=True).stdout
    strong, weak = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            (weak if parts[1] in "WwVvu" else strong).add(parts[2])
    return strong, weak


def demangle(nm_symbol):
    try:
        return subprocess.run(["c++filt", nm_symbol], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return nm_symbol


def check_symbols(nm, stages):
    owner, weak = {}, set()
    for name, _, _, objects in stages:
        strong, stage_weak = defined_symbols(nm, objects)
        for s in strong:
            owner.setdefault(s, name)
        weak |= stage_weak
    errors = []
    for name, _, sees, objects in stages:
        for s in sorted(undefined_symbols(nm, objects)):
            if s in weak or s not in owner:
                continue
            home = owner[s]
            if home != name and home not in sees:
                errors.append(f"stage {name} calls {demangle(s)}, defined in stage {home}, "
                              f"which it does not depend on")
    return errors


def docs_graph(path):
    text = open(path, encoding="utf-8").read()
    start = text.find("## The stages behind it")
    if start < 0:
        return None
    block = text.find("```text", start)
    end = text.find("```", block + 7)
    lines = {}
    for line in text[block + 7:end].strip().splitlines():
        name, _, deps = line.partition(":")
        lines[name.strip()] = [d for d in deps.replace(",", " ").split() if d]
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("layers")
    parser.add_argument("--nm", default="nm")
    parser.add_argument("--docs")
    args = parser.parse_args()
    stages = read_layers(args.layers)
    errors = check_symbols(args.nm, stages)
    if args.docs:
        built = {name: depends for name, depends, _, _ in stages}
        drawn = docs_graph(args.docs)
        if drawn != built:
            errors.append(f"{args.docs}: the stage graph under 'The stages behind it' is "
                          f"{drawn}, the build declares {built}")
    for e in errors:
        print(e)
    print(f"{len(stages)} stages, {sum(len(s[3]) for s in stages)} objects: "
          f"{'ok' if not errors else f'{len(errors)} wrong-way uses'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
