#!/usr/bin/env python3
"""Lays out tests/cases/*/expected.json as the golden cases are kept: one JSON array,
indented by one space, key order as written. Used after DENORMD_UPDATE_GOLDEN=1 rewrote
cases with one compact op per line."""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent / "tests" / "cases"
for path in sorted(root.glob("*/expected.json")):
    text = path.read_text(encoding="utf-8")
    laid_out = json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n"
    if laid_out != text:
        path.write_text(laid_out, encoding="utf-8")
        print(f"formatted {path.relative_to(root.parent.parent)}", file=sys.stderr)
