"""Shared helpers for the mapping JSON Schema checks (used with /usr/bin/python3)."""
import json
import sys
from pathlib import Path

try:
    import jsonschema
except ImportError:  # pragma: no cover - reported to the user
    sys.exit("python3-jsonschema is missing: run scripts/install-deps.sh "
             "(and use /usr/bin/python3, not a pyenv python)")


def load_validator(schema_path: Path):
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(validator, path: Path):
    """The schema's complaints about one file, as 'pointer: message' strings ([] = accepted).
    A file that is not JSON at all counts as rejected, as it does in an editor."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return [f"not JSON: {e}"]
    out = []
    for err in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in err.absolute_path)
        out.append(f"{pointer or '/'}: {err.message[:300]}")
    return out
