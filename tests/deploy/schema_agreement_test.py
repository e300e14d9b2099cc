#!/usr/bin/python3
"""docs/mapping.schema.json and denormd's mapping loader must agree on every golden case.

  valid    mappings/*.json and tests/cases/*/mapping*.json: the schema accepts each file, a
           `$schema` key in it points at docs/mapping.schema.json, and (with --denormd)
           `denormd check --mappings DIR` exits 0 for mappings/ and for each case's mappings.
  invalid  each folder tests/invalid_mappings/<case>/ (*.json + error.txt): the schema
           rejects at least one of its files, unless the folder holds `schema-silent` (an
           error JSON Schema cannot express: duplicates across files, overlapping target
           paths, `sort`/`idField` not among `fields`, ...); and (with --denormd)
           `denormd check --mappings <case>` exits 2.

Exits 77 (CTest: skipped) when there is no golden case at all yet.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from schema_lib import load_validator, schema_errors

SKIP = 77


def run_check(denormd, folder, extra):
    cmd = [str(denormd), "check", "--mappings", str(folder), *extra]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"timed out: {' '.join(cmd)}"
    return p.returncode, p.stdout


def main():
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", type=Path, default=here.parent.parent)
    ap.add_argument("--denormd", type=Path, help="denormd binary: also run `denormd check` on each case")
    ap.add_argument("--check-arg", action="append", default=[],
                    help="argument added to `denormd check --mappings DIR` (repeatable), e.g. --db")
    args = ap.parse_args()
    repo = args.repo.resolve()
    schema_path = repo / "docs" / "mapping.schema.json"
    validator = load_validator(schema_path)
    if args.denormd and not os.access(args.denormd, os.X_OK):
        sys.exit(f"--denormd {args.denormd} is not an executable file")

    failures, notes = [], []
    checked = 0

    # ---- valid ------------------------------------------------------------------------------
    valid_dirs = []  # (label, folder holding only the mapping files of one run)
    tmp = Path(tempfile.mkdtemp(prefix="denormd-schema-"))
    try:
        sample = sorted((repo / "mappings").glob("*.json"))
        if sample:
            valid_dirs.append(("mappings/", repo / "mappings"))
        cases = sorted(p for p in (repo / "tests" / "cases").glob("*") if p.is_dir())
        valid_files = list(sample)
        for case in cases:
            files = sorted(case.glob("mapping*.json"))
            if not files:
                continue
            valid_files += files
            copy_dir = tmp / case.name
            copy_dir.mkdir()
            for f in files:
                shutil.copy2(f, copy_dir / f.name)
            valid_dirs.append((f"tests/cases/{case.name}/", copy_dir))

        for f in valid_files:
            checked += 1
            rel = f.relative_to(repo)
            errs = schema_errors(validator, f)
            if errs:
                failures.append(f"{rel}: valid mapping rejected by the schema:\n      " + "\n      ".join(errs))
                continue
            ref = _schema_ref(f)
            if ref is not None and (f.parent / ref).resolve() != schema_path:
                failures.append(f"{rel}: \"$schema\": \"{ref}\" does not point at docs/mapping.schema.json")

        if args.denormd:
            for label, folder in valid_dirs:
                checked += 1
                code, out = run_check(args.denormd, folder, args.check_arg)
                if code != 0:
                    failures.append(f"{label}: `denormd check` exited {code} on valid mappings:\n{_indent(out)}")

        # ---- invalid ----------------------------------------------------------------------------
        invalid_root = repo / "tests" / "invalid_mappings"
        invalid_cases = sorted(p for p in invalid_root.glob("*") if p.is_dir())
        for case in invalid_cases:
            rel = case.relative_to(repo)
            files = sorted(case.glob("*.json"))
            if not files:
                failures.append(f"{rel}: an invalid case without any *.json file")
                continue
            if not (case / "error.txt").is_file():
                failures.append(f"{rel}: error.txt is missing")
            silent = (case / "schema-silent").exists()
            rejected = {f.name: schema_errors(validator, f) for f in files}
            rejected = {k: v for k, v in rejected.items() if v}
            checked += 1
            if not silent and not rejected:
                expected = (case / "error.txt").read_text(encoding="utf-8").strip() if (case / "error.txt").is_file() else "?"
                failures.append(f"{rel}: the schema accepts every file, but the loader's error is:\n"
                                f"{_indent(expected)}\n      (fix the schema, or mark the case `schema-silent` if "
                                "JSON Schema cannot express it)")
            if silent and rejected:
                notes.append(f"{rel}: marked schema-silent, yet the schema rejects "
                             f"{', '.join(sorted(rejected))} (the marker may be stale)")
            if args.denormd:
                checked += 1
                code, out = run_check(args.denormd, case, args.check_arg)
                if code != 2:
                    failures.append(f"{rel}: `denormd check` exited {code}, expected 2:\n{_indent(out)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for n in notes:
        print("note:", n)
    for f in failures:
        print("FAIL", f)
    if checked == 0:
        print("schema agreement: no golden mappings or invalid cases yet; skipped")
        return SKIP
    loader = "schema and loader" if args.denormd else "schema only (no --denormd)"
    print(f"schema agreement ({loader}): {len(valid_files)} valid files in {len(valid_dirs)} folders, "
          f"{len(invalid_cases)} invalid cases")
    print(f"schema agreement: {checked} checks, {len(failures)} problems")
    return 1 if failures else 0


def _schema_ref(path):
    import json
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    ref = doc.get("$schema") if isinstance(doc, dict) else None
    return ref if isinstance(ref, str) else None


def _indent(text, n=6):
    text = (text or "").rstrip()[-2000:]
    return "\n".join(" " * n + line for line in text.splitlines()) or " " * n + "(no output)"


if __name__ == "__main__":
    sys.exit(main())
