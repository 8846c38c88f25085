#!/usr/bin/env python3
"""List C++ functions longer than N lines, and the largest files and classes.

    scripts/function_sizes.py [--over N] [--top K] [PATH ...]

PATHs default to src/ and python/src under the repository root. The scanner
matches braces after removing comments, strings and character literals; a
brace opens a function body when the text since the last statement or scope
boundary has a parenthesised parameter list and no control keyword. Lambdas
and local classes count as part of the function around them. A function's
length runs from the line of its name to its closing brace.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = [ROOT / "src", ROOT / "python" / "src"]
SUFFIXES = {".cpp", ".cc", ".h", ".hpp"}

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|return|try)\b")
SCOPE = re.compile(r"^(template\s*<.*>\s*)?(class|struct|union|enum|namespace)\b|^extern\b")
ACCESS = re.compile(r"\b(public|private|protected)\s*:(?!:)")


@dataclass
class Unit:
    path: Path
    name: str
    kind: str  # "function" or "class"
    first: int
    last: int

    @property
    def lines(self) -> int:
        return self.last - self.first + 1


def strip_code(text: str) -> str:
    """Blank comments, strings and character literals, keeping newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # A quote after a digit is a digit separator (1'000), not a literal.
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(header: str) -> str | None:
    """The name before the parameter list, or None when the header is no function."""
    header = ACCESS.sub(" ", header).strip()
    header = re.sub(r"^template\s*<[^{]*?>\s*(?=[A-Za-z_])", "", header)
    if not header or CONTROL.match(header) or SCOPE.match(header):
        return None
    paren = header.find("(")
    if paren < 0:
        return None
    before = header[:paren]
    if "=" in before.replace("operator", "", 1) and "operator" not in before:
        return None  # an initialised variable or a lambda held by one
    match = re.search(r"((?:[A-Za-z_~][\w]*\s*(?:<[^()]*>)?\s*::\s*)*(?:operator\s*\S+?|~?[A-Za-z_]\w*))\s*$", before)
    return re.sub(r"\s+", "", match.group(1)) if match else None


def class_name(header: str) -> str | None:
    header = ACCESS.sub(" ", header).strip()
    header = re.sub(r"^template\s*<.*?>\s*", "", header)
    match = re.match(r"(?:class|struct)\s+(?:\[\[.*?\]\]\s*)?([A-Za-z_]\w*)", header)
    return match.group(1) if match else None


def scan(path: Path) -> list[Unit]:
    code = strip_code(path.read_text(encoding="utf-8", errors="replace"))
    units: list[Unit] = []
    # Each open brace: (kind, name, first line); kind is function, class, scope or block.
    stack: list[tuple[str, str, int]] = []
    header_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
            continue
        in_function = any(kind == "function" for kind, _, _ in stack)
        if c == ";" and not in_function:
            header_start = i + 1
        elif c == "{":
            if in_function:
                stack.append(("block", "", line))
                continue
            header = code[header_start:i]
            lead = len(header) - len(header.lstrip())
            first = line - code[header_start + lead:i].count("\n")
            stripped = header.strip()
            name = function_name(header)
            if name:
                stack.append(("function", name, first))
            elif cls := class_name(header):
                stack.append(("class", cls, first))
                header_start = i + 1
            elif SCOPE.match(ACCESS.sub(" ", stripped)) or stripped.startswith("extern"):
                stack.append(("scope", "", first))
                header_start = i + 1
            else:
                stack.append(("block", "", first))
        elif c == "}" and stack:
            kind, name, first = stack.pop()
            if kind in ("function", "class"):
                units.append(Unit(path, name, kind, first, line))
            if kind != "block" and not any(k == "function" for k, _, _ in stack):
                header_start = i + 1
    return units


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--over", type=int, default=100, help="list functions longer than this (default 100)")
    parser.add_argument("--top", type=int, default=10, help="how many of the largest files and classes to list")
    args = parser.parse_args()

    files: list[Path] = []
    for root in args.paths or DEFAULT_PATHS:
        files += [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES)
    units = [u for f in files for u in scan(f)]

    def shown(path: Path) -> str:
        try:
            return str(path.resolve().relative_to(ROOT))
        except ValueError:
            return str(path)

    long_functions = sorted((u for u in units if u.kind == "function" and u.lines > args.over),
                            key=lambda u: (-u.lines, shown(u.path), u.first))
    print(f"Functions over {args.over} lines:")
    for u in long_functions:
        print(f"  {u.lines:5d}  {shown(u.path)}:{u.first}  {u.name}")

    print("\nLargest classes:")
    classes = sorted((u for u in units if u.kind == "class"), key=lambda u: -u.lines)[: args.top]
    for u in classes:
        print(f"  {u.lines:5d}  {shown(u.path)}:{u.first}  {u.name}")

    print("\nLargest files:")
    sizes = sorted(((len(f.read_text(encoding='utf-8', errors='replace').splitlines()), f) for f in files),
                   key=lambda s: -s[0])[: args.top]
    for lines, f in sizes:
        print(f"  {lines:5d}  {shown(f)}")

    functions = sum(1 for u in units if u.kind == "function")
    print(f"\n{len(long_functions)} of {functions} functions over {args.over} lines in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
