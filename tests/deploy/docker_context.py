"""The files `docker build .` sends as build context, per .dockerignore (Docker's rules:
patterns are matched in order against the path and each of its parent folders, the last
matching pattern wins, `!` re-includes, `*` and `?` stay within one path component, `**`
spans any number of them)."""
import os
import re
from pathlib import Path


def _regex(pattern):
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                i += 1
                out += "(?:.*/)?"
            else:
                out += ".*"
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return re.compile("^" + out + "$")


def read_patterns(dockerignore):
    pats = []
    if not dockerignore.is_file():
        return pats
    for line in dockerignore.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        p = line[1:].strip() if neg else line
        p = os.path.normpath(p.lstrip("/")).replace(os.sep, "/")
        if p.startswith("./"):
            p = p[2:]
        pats.append((neg, _regex(p)))
    return pats


def excluded(rel, pats):
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for neg, rx in pats:
        if any(rx.match(p) for p in prefixes):
            result = not neg
    return result


def context_files(root, dockerignore=None):
    root = Path(root)
    pats = read_patterns(dockerignore or root / ".dockerignore")
    files = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        if rel_dir.startswith(".git/"):
            dirnames[:] = []
            continue
        for f in filenames:
            rel = rel_dir + f
            if not excluded(rel, pats):
                files.add(rel)
    return files
