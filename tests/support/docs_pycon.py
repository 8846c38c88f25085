"""Replays a ```pycon block of the documents for tests/docs_test.cpp.

Runs each `>>> ` statement (with its `... ` lines) as Python's interactive
interpreter does, in one namespace, and prints the transcript that makes:
the statement, then what it prints (an expression's value as the
interpreter shows it; for an exception, the traceback's first line, "  ..."
and its last line). The lines of the block that are not statements are
ignored: the test compares the transcript printed with the block.
"""

import sys
import traceback


def statements(lines):
    current = None
    for line in lines:
        if line.startswith(">>> "):
            if current:
                yield current
            current = [line[4:]]
        elif line.startswith("... ") and current is not None:
            current.append(line[4:])
        else:
            if current:
                yield current
            current = None
    if current:
        yield current


def main():
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
    sys.stderr = sys.stdout  # warnings in order with what the statements print
    scope = {"__name__": "__main__"}
    for source in statements(lines):
        print(">>> " + source[0])
        for line in source[1:]:
            print("... " + line)
        try:
            exec(compile("\n".join(source) + "\n", "<stdin>", "single"), scope)
        except Exception as e:  # shown as the interpreter shows it, abridged
            print("Traceback (most recent call last):")
            print("  ...")
            print(traceback.format_exception_only(type(e), e)[-1].rstrip())
        sys.stdout.flush()


if __name__ == "__main__":
    main()
