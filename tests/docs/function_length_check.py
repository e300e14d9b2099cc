#!/usr/bin/python3
"""No function in src/ is over 80 lines (issue 32 §4).

Reads every src/**/*.cc as clang-format leaves it: a function defined outside a class starts
at column 0 (its signature, with any `template <...>` line) and ends at a line that is `}`
alone at column 0. A definition's length counts the lines from its signature's first line to
that brace, both included. Member functions written inside a class body are not counted (the
project defines them there only when short). Exits 1 with one line per function over the
limit: file:line name length.

Usage: function_length_check.py [--root DIR]
"""
import argparse
import re
import sys
from pathlib import Path

LIMIT = 80

# Functions allowed over the limit, with why. Empty: none is.
ALLOWED = set()

# A column-0 line that starts no definition.
NOT_A_START = re.compile(r"^(\s|$|#|//|/\*|\*|}|namespace\b|extern\b|using\b|static_assert\b)")
# A definition that is data or a type, not a function: its body ends with `};`.
NOT_A_FUNCTION = re.compile(r"^(class|struct|union|enum)\b|=\s*\{?$")


def name_of(signature):
    """The function's qualified name: the last word before the parameter list."""
    head = re.sub(r"^template\s*<.*?>\s*", "", signature)
    m = re.match(r"(.*?\boperator\s*(\(\)|[^\s(]+))", head)
    head = m.group(1) if m else head.split("(", 1)[0]
    words = head.split()
    return words[-1].lstrip("*&") if words else "?"


def long_functions(text, limit=LIMIT):
    """[(line, name, length)] of the definitions in `text` longer than `limit` lines."""
    found = []
    state = "outside"  # outside, signature, body (a function's), other (a type's or data's)
    start = 0
    signature = ""
    raw_end = None  # the end of a raw string literal that spans lines
    for number, line in enumerate(text.splitlines(), 1):
        if raw_end is not None:  # only what follows the literal's end is code
            if raw_end not in line:
                continue
            line = " " + line.split(raw_end, 1)[1]
            raw_end = None
        m = re.search(r'R"([^(\s]*)\(', line)
        if m and (")" + m.group(1) + '"') not in line[m.end():]:
            raw_end = ")" + m.group(1) + '"'
        code = re.sub(r"\s*//.*$", "", line).rstrip()
        if state == "outside":
            if NOT_A_START.match(line):
                continue
            state, start, signature = "signature", number, ""
        if state == "signature":
            signature += " " + code.strip()
            if code.endswith(";"):
                state = "outside"
            elif code.endswith("}"):
                state = "outside"  # a definition on one line
            elif code.endswith("{"):
                head = re.sub(r"^template\s*<.*?>\s*", "", signature.strip())
                state = "other" if NOT_A_FUNCTION.search(head) else "body"
        elif state == "body" and line.rstrip() == "}":
            length = number - start + 1
            if length > limit:
                found.append((start, name_of(signature.strip()), length))
            state = "outside"
        elif state == "other" and line.startswith("}"):
            state = "outside"
    return found


def check(root, allowed=ALLOWED):
    problems = []
    for path in sorted((root / "src").rglob("*.cc")):
        rel = path.relative_to(root).as_posix()
        for line, name, length in long_functions(path.read_text()):
            if (rel, name) not in allowed:
                problems.append(f"{rel}:{line} {name} {length}")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = p.parse_args()
    problems = check(args.root)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} function(s) over {LIMIT} lines: split them (issue 32)")
        return 1
    print(f"no function in src/ is over {LIMIT} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
