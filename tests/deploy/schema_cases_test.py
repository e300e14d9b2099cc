#!/usr/bin/python3
"""Unit tests of docs/mapping.schema.json on its own fixtures (tests/deploy/schema_cases):
every file in valid/ must pass, every file in invalid/ must fail. The fixtures cover each
rule the schema encodes. The operators the schema allows in computed fields must be those of
the loader's table (src/mapping/computed_expression.cc). With --denormd, the loader must agree file by file
(`denormd check --mappings DIR --db shop` on a folder holding just that file: 0 for valid,
2 for invalid), so a rule changed on one side only shows up here. The golden cases shared
with the loader are checked by schema_agreement_test.py."""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from schema_lib import load_validator, schema_errors


def loader_exit(denormd, f, tmp):
    d = tmp / f.stem
    d.mkdir()
    shutil.copy2(f, d / f.name)
    p = subprocess.run([str(denormd), "check", "--mappings", str(d), "--db", "shop"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout


def operator_problems(schema_path, source):
    """Where the schema's computed-field operators differ from the loader's table."""
    table = source.read_text(encoding="utf-8")
    table = table[table.index("operators = {{"):table.index("}};")]
    loader = re.findall(r'\{"(\$\w+)", F::\w+,', table)
    schema = json.loads(schema_path.read_text(encoding="utf-8"))["definitions"]["operatorCall"]
    problems = []
    if schema["propertyNames"]["enum"] != loader:
        problems.append(f"the operators of #/definitions/operatorCall are not the loader's ({source.name}):\n"
                        f"    only in the schema: {sorted(set(schema['propertyNames']['enum']) - set(loader))}\n"
                        f"    only in the loader: {sorted(set(loader) - set(schema['propertyNames']['enum']))}")
    if sorted(schema["properties"]) != sorted(loader):
        problems.append("#/definitions/operatorCall/properties does not describe exactly the allowed operators")
    for name in loader:
        if name not in schema["description"]:
            problems.append(f"#/definitions/operatorCall/description does not list {name}")
    return problems


def main():
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", type=Path, default=here.parent.parent / "docs" / "mapping.schema.json")
    ap.add_argument("--cases", type=Path, default=here / "schema_cases")
    ap.add_argument("--denormd", type=Path, help="also check that the loader agrees on each fixture")
    args = ap.parse_args()

    validator = load_validator(args.schema)
    failures = operator_problems(args.schema, here.parent.parent / "src" / "mapping" / "computed_expression.cc")
    valid = sorted((args.cases / "valid").glob("*.json"))
    invalid = sorted((args.cases / "invalid").glob("*.json"))
    if not valid or not invalid:
        sys.exit(f"no fixtures under {args.cases}")
    tmp = Path(tempfile.mkdtemp(prefix="denormd-schema-cases-"))
    try:
        for f in valid:
            errs = schema_errors(validator, f)
            if errs:
                failures.append(f"{f.name}: valid fixture rejected by the schema:\n    " + "\n    ".join(errs))
            if args.denormd:
                code, out = loader_exit(args.denormd, f, tmp)
                if code != 0:
                    failures.append(f"{f.name}: valid fixture: `denormd check` exited {code}:\n{out}")
        for f in invalid:
            if not schema_errors(validator, f):
                failures.append(f"{f.name}: invalid fixture accepted by the schema")
            if args.denormd:
                code, out = loader_exit(args.denormd, f, tmp)
                if code != 2:
                    failures.append(f"{f.name}: invalid fixture: `denormd check` exited {code}, expected 2:\n{out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for msg in failures:
        print("FAIL", msg)
    who = "schema and loader" if args.denormd else "schema"
    print(f"schema fixtures ({who}): {len(valid)} valid, {len(invalid)} invalid files, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
