#!/usr/bin/python3
"""docs/architecture.md stays true where a machine can tell (issue 32 §5).

Checks, against the tree as it is:
  * the Layers table has one row per folder of src/ (a folder with a CMakeLists.txt), and
    names no folder that does not exist;
  * the table's "links" column says exactly which denormd libraries each folder's CMake
    target links (`denormd::x` in its DEPS; `all` means every library above it), and every
    library links only libraries above it in the table: the arrows of the data flow;
  * in src/ops/, no file under commands/ includes one under services/ (a command never
    needs the daemon; a service may run a command's code);
  * the sentence that lists what a `write_op` is names the alternatives of the variant in
    src/mapping/write_op.h, in order;
  * the kind contract ("Mapping kinds"): the concept `mapping_kind` exists, every alternative
    of `any_kind` checks itself with static_assert(mapping_kind<K>) in its own .cc, every
    member the doc's table names is in the concept, and outside a kind's own files nothing in
    src/ downcasts to it (`as<K>`); the coalescer and the writer name no kind; src/ has no
    `assert(false` arm and no `if constexpr (requires` probe standing for a member.
Exits 1 with one line per difference.

Usage: architecture_check.py [--root DIR]
"""
import argparse
import re
import sys
from pathlib import Path


def layers_table(doc):
    """[(library, links cell)] from the table under '## Layers', in order."""
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"^\| `([a-z_]+)` \|.*\| ([^|]*) \|$", line)
        if m:
            rows.append((m.group(1), m.group(2).strip()))
    return rows


def cmake_deps(root, folder):
    """The denormd libraries the folder's library links, from its CMakeLists.txt."""
    text = (root / "src" / folder / "CMakeLists.txt").read_text()
    text = re.sub(r"#.*", "", text)
    m = re.search(r"denormd_library\(\s*%s\b(.*?)\)" % re.escape(folder), text, re.S)
    if not m:
        return None
    deps = m.group(1).split("DEPS", 1)[1] if "DEPS" in m.group(1) else ""
    extra = "".join(re.findall(r"target_link_libraries\(\s*denormd_%s\b(.*?)\)" % re.escape(folder), text, re.S))
    return set(re.findall(r"denormd::([a-z_]+)", deps + extra))


def check(root):
    problems = []
    doc = (root / "docs" / "architecture.md").read_text()
    rows = layers_table(doc)
    names = [r[0] for r in rows]
    folders = sorted(p.parent.name for p in (root / "src").glob("*/CMakeLists.txt"))
    for f in folders:
        if f not in names:
            problems.append("src/%s has no row in the Layers table of docs/architecture.md" % f)
    for n in names:
        if n not in folders:
            problems.append("the Layers table names `%s`, but src/%s does not exist" % (n, n))
    if len(set(names)) != len(names):
        problems.append("the Layers table names a library twice: %s" % names)

    for i, (name, cell) in enumerate(rows):
        if name not in folders:
            continue
        above = names[:i]
        deps = cmake_deps(root, name)
        if deps is None:
            problems.append("src/%s/CMakeLists.txt has no denormd_library(%s ...)" % (name, name))
            continue
        for d in sorted(deps - set(above)):
            problems.append("`%s` links denormd::%s, which is not above it in the Layers table"
                            % (name, d))
        if cell == "all":
            said = set(above)
        else:
            said = {w for w in re.findall(r"[a-z_]+", cell) if w in names}
        if said != deps:
            problems.append("`%s`: the table says it links %s; src/%s/CMakeLists.txt links %s"
                            % (name, sorted(said) or "nothing of ours", name, sorted(deps) or "nothing of ours"))

    for f in sorted((root / "src" / "ops" / "commands").glob("*.[hc]*")):
        for inc in re.findall(r'#include "(ops/services/[^"]+)"', f.read_text()):
            problems.append("src/ops/commands/%s includes %s: a command never uses a daemon service"
                            % (f.name, inc))

    header = (root / "src" / "mapping" / "write_op.h").read_text()
    m = re.search(r"std::variant<([^>]*)>\s*what;", header)
    if not m:
        problems.append("src/mapping/write_op.h: no `std::variant<...> what;` found")
    else:
        alternatives = [a.strip() for a in m.group(1).split(",")]
        listed = re.search(r"A `write_op` is one of: ([^.]*)\.", doc.replace("\n", " "))
        if not listed:
            problems.append("docs/architecture.md: no sentence 'A `write_op` is one of: ...'")
        else:
            said = re.findall(r"`([a-z_]+)`", listed.group(1))
            if said != alternatives:
                problems.append("docs/architecture.md lists the write_op alternatives %s; "
                                "src/mapping/write_op.h has %s" % (said, alternatives))
    problems += kind_contract(root, doc)
    return problems


def kind_contract(root, doc):
    problems = []
    contract_h = root / "src" / "mapping" / "kind_contract.h"
    contract = contract_h.read_text() if contract_h.exists() else ""
    if "concept mapping_kind" not in contract:
        problems.append("src/mapping/kind_contract.h: no `concept mapping_kind`")
    m = re.search(r"using any_kind = std::variant<([^>]*)>;", (root / "src" / "mapping" / "mapping.h").read_text())
    kinds = [k.strip() for k in m.group(1).split(",")] if m else []
    if not kinds:
        problems.append("src/mapping/mapping.h: no `using any_kind = std::variant<...>;` found")
    for k in kinds:
        cc = root / "src" / "mapping" / ("%s.cc" % k)
        if not cc.exists() or ("static_assert(mapping_kind<%s>)" % k) not in cc.read_text():
            problems.append("src/mapping/%s.cc does not check static_assert(mapping_kind<%s>)" % (k, k))
    section = doc.split("## Mapping kinds", 1)[1].split("\n## ", 1)[0] if "## Mapping kinds" in doc else ""
    for line in section.splitlines():
        cell = re.match(r"^\| ([^|]*`[^|]*) \|", line)
        if not cell:
            continue
        for member in re.findall(r"`([a-z_]+)(?:\(\))?`", cell.group(1)):
            if not re.search(r"\b%s\b" % member, contract):
                problems.append("docs/architecture.md names kind member `%s`; the concept "
                                "mapping_kind in src/mapping/kind_contract.h does not" % member)
    own = {k: {"src/mapping/%s.h" % k, "src/mapping/%s.cc" % k} for k in kinds}
    for f in sorted(list((root / "src").rglob("*.cc")) + list((root / "src").rglob("*.h"))):
        rel = f.relative_to(root).as_posix()
        text = f.read_text()
        for k in kinds:
            if rel not in own[k] and re.search(r"\bas<(?:mapping::)?%s>" % k, text):
                problems.append("%s downcasts to %s (as<%s>): reach a kind through its contract "
                                "or one arm per kind" % (rel, k, k))
        if "assert(false" in text:
            problems.append("%s has an assert(false ...) arm" % rel)
        if re.search(r"if constexpr \(requires", text):
            problems.append("%s probes a member with `if constexpr (requires ...)`: put it in "
                            "the contract" % rel)
        if rel == "src/mapping/coalescer.cc" or rel.startswith("src/sink/"):
            for k in kinds:
                if re.search(r"\b%s\b" % k, text):
                    problems.append("%s names %s: the coalescer and the writer hold no per-kind "
                                    "code" % (rel, k))
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = p.parse_args()
    problems = check(args.root)
    for line in problems:
        print(line)
    if problems:
        return 1
    print("docs/architecture.md agrees with src/: layers, links, ops commands apart from services, "
          "write_op, and the kind contract")
    return 0


if __name__ == "__main__":
    sys.exit(main())
