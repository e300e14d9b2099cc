#!/usr/bin/python3
"""Every series the Grafana dashboard and the alert rules query must be one denormd exports.

Reads the metric list from docs/metrics.md (the metrics denormd documents), then checks:
  * each metric name in each dashboard query, template variable and alert expression is
    listed (histograms with their _bucket/_sum/_count series); the alert rules may also use
    the series Prometheus adds (`up`), the dashboard may not;
  * each label used in a selector or a by/without/on/ignoring clause exists on the metrics
    it applies to (their listed labels, the scrape target labels job/instance plus the
    static labels of the denormd job in deploy/prometheus/prometheus.yml, and `le`);
  * the dashboard parses, has unique panel ids, uses the provisioned data source uid, and
    has a panel for each thing issue 6 asks for: lag per source, events/s, writes/s by
    result, errors, checkpoint age, backfill progress; and, for --ha, the namespaces each
    instance holds and those nobody holds.
"""
import argparse
import json
import re
import sys
from pathlib import Path

try:
    import yaml
except ImportError:
    sys.exit("python3-yaml is missing: run scripts/install-deps.sh and use /usr/bin/python3")

IDENT = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}
GROUPING = ("by", "without", "on", "ignoring", "group_left", "group_right")


def read_metrics(md_path):
    """-> ({name: (type, labels)} for denormd, {name: (type, labels)} added by Prometheus)."""
    exported, added, current = {}, {}, None
    current = exported
    row = re.compile(r"^\|\s*`(" + IDENT + r")`\s*\|\s*([a-z]+)[^|]*\|([^|]*)\|")
    for line in md_path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## ") and "Prometheus adds" in line:
            current = added
        m = row.match(line)
        if m:
            labels = set(re.findall(r"`(" + IDENT + r")`", m.group(3)))
            current[m.group(1)] = (m.group(2), labels)
    return exported, added


def series_names(metrics):
    """Every series name a metric family exposes -> the family name."""
    out = {}
    for name, (kind, _) in metrics.items():
        out[name] = name
        if kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                out[name + suffix] = name
    return out


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def matching_paren(s, i):
    """Index of the ')' closing the '(' at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced parentheses in: {s}")


def metric_names(expr):
    """Metric names an expression selects, in order."""
    s = strip_strings(expr)
    s = re.sub(r"\{[^}]*\}", " ", s)          # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)         # range and subquery windows
    s = re.sub(r"\$\{?\w+\}?", " ", s)        # Grafana variables
    for kw in GROUPING:                       # label lists of grouping clauses
        s = re.sub(r"\b" + kw + r"\s*\([^)]*\)", " ", s)
    names = []
    for m in re.finditer(r"(?<![\w.:])(" + IDENT + r")(\s*\()?", s):
        name, call = m.group(1), m.group(2)
        if call or name.lower() in KEYWORDS:
            continue
        names.append(name)
    return names


def label_problems(expr, families, labels_of, implicit):
    """Labels used on metrics that do not have them."""
    problems = []
    s = strip_strings(expr.replace('\\"', ""))
    # selectors: name{a="x", b=~"y"}
    raw = re.sub(r"\$\{?\w+\}?", "v", expr)
    for m in re.finditer(r"(" + IDENT + r")?\s*\{([^}]*)\}", raw):
        name = m.group(1)
        family = families.get(name) if name else None
        if family is None:
            continue
        for label in re.findall(r"(" + IDENT + r")\s*(?:=~|!~|!=|=)", strip_strings(m.group(2))):
            if label not in labels_of[family] | implicit | ({"le"} if name.endswith("_bucket") else set()):
                problems.append(f"{name} has no label {label!r}")
    # grouping clauses: sum by (a, b) (inner)   or   sum (inner) by (a, b)
    for m in re.finditer(r"\b(by|without|on|ignoring)\s*\(([^)]*)\)", s):
        labels = [l.strip() for l in m.group(2).split(",") if l.strip()]
        rest = s[m.end():].lstrip()
        if rest.startswith("("):
            start = m.end() + (len(s[m.end():]) - len(rest))
            inner = s[start:matching_paren(s, start) + 1]
        else:  # trailing form: the group that ends just before the keyword
            before = s[:m.start()].rstrip()
            if not before.endswith(")"):
                continue
            depth, k = 0, len(before) - 1
            while k >= 0:
                depth += {")": 1, "(": -1}.get(before[k], 0)
                if depth == 0:
                    break
                k -= 1
            inner = before[k:]
        names = [n for n in metric_names(inner) if n in families]
        if not names:
            continue
        available = set(implicit)
        for n in names:
            available |= labels_of[families[n]]
            if n.endswith("_bucket"):
                available.add("le")
        for label in labels:
            if label not in available:
                problems.append(f"{m.group(1)} ({label}) but {', '.join(sorted(set(names)))} has no label {label!r}")
    return problems


def dashboard_queries(dash):
    """(where, expr) for every query in the dashboard."""
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dash.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                out.append((f"panel {p.get('id')} {p.get('title')!r} target {t.get('refId')}", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and q:
            inner = re.match(r"^\s*label_values\((.*)\)\s*$", q)
            if inner:  # label_values(selector, label): check the selector and the label
                sel, _, label = inner.group(1).rpartition(",")
                out.append((f"variable {v.get('name')}", f"count by ({label.strip()}) ({sel})"))
            else:
                out.append((f"variable {v.get('name')}", q))
    return out


def main():
    here = Path(__file__).resolve().parent
    repo = here.parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics-md", type=Path, default=repo / "docs" / "metrics.md")
    ap.add_argument("--dashboard", type=Path, action="append")
    ap.add_argument("--rules", type=Path, action="append")
    ap.add_argument("--prometheus-config", type=Path, default=repo / "deploy" / "prometheus" / "prometheus.yml")
    ap.add_argument("--datasources", type=Path, default=repo / "deploy" / "grafana" / "provisioning" / "datasources")
    args = ap.parse_args()
    dashboards = args.dashboard or sorted((repo / "deploy" / "grafana" / "dashboards").glob("*.json"))
    rule_files = args.rules or [repo / "deploy" / "prometheus" / "alerts.yml"]

    exported, added = read_metrics(args.metrics_md)
    problems = []
    if len(exported) < 10 or not all(n.startswith("denormd_") for n in exported):
        problems.append(f"{args.metrics_md}: expected the table of denormd_* metrics, found {sorted(exported)}")
    if "up" not in added:
        problems.append(f"{args.metrics_md}: the 'Series Prometheus adds' table must list `up`")

    # Target labels every scraped denormd series carries.
    implicit = {"job", "instance"}
    prom = yaml.safe_load(args.prometheus_config.read_text(encoding="utf-8"))
    for job in prom.get("scrape_configs", []):
        if job.get("job_name") == "denormd":
            for sc in job.get("static_configs", []):
                implicit |= set((sc.get("labels") or {}).keys())
    labels_of = {n: l for n, (_, l) in {**exported, **added}.items()}

    checked = 0
    # ---- dashboards ---------------------------------------------------------------------------
    ds_uids = set()
    for f in sorted(args.datasources.glob("*.y*ml")):
        for ds in (yaml.safe_load(f.read_text(encoding="utf-8")) or {}).get("datasources", []):
            ds_uids.add(ds.get("uid"))
    if not dashboards:
        problems.append("no dashboard found under deploy/grafana/dashboards")
    for path in dashboards:
        try:
            dash = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            problems.append(f"{path}: not JSON: {e}")
            continue
        families = series_names(exported)
        queries = dashboard_queries(dash)
        if not queries:
            problems.append(f"{path}: no queries found")
        used = set()
        for where, expr in queries:
            checked += 1
            for name in metric_names(expr):
                if name not in families:
                    problems.append(f"{path.name}: {where}: {name!r} is not a denormd metric in docs/metrics.md: {expr}")
                else:
                    used.add(families[name])
            for p in label_problems(expr, families, labels_of, implicit):
                problems.append(f"{path.name}: {where}: {p}: {expr}")
        ids = []

        def walk(ps):
            for p in ps:
                ids.append(p.get("id"))
                for ds in [p.get("datasource")] + [t.get("datasource") for t in p.get("targets", [])]:
                    if isinstance(ds, dict) and ds.get("type") == "prometheus" and ds.get("uid") not in ds_uids:
                        problems.append(f"{path.name}: panel {p.get('id')}: data source uid {ds.get('uid')!r} "
                                        f"is not provisioned ({sorted(ds_uids)})")
                walk(p.get("panels", []))

        walk(dash.get("panels", []))
        if len(ids) != len(set(ids)) or None in ids:
            problems.append(f"{path.name}: panel ids must be present and unique: {ids}")
        exprs = " ".join(e for _, e in queries)
        required = {
            "lag per source": r"denormd_lag_seconds\b[^()]*\)?",
            "events/s": r"rate\(denormd_events_total",
            "writes/s by result": r"by \([^)]*\bresult\b[^)]*\) \(rate\(denormd_writes_total",
            "errors": r"denormd_errors_total",
            "checkpoint age": r"denormd_checkpoint_age_seconds",
            "backfill progress": r"denormd_backfill_documents_total",
            "lease holders (--ha)": r"by \(instance\) \(denormd_lease_held",
            "namespaces nobody holds (--ha)": r"by \(unit\) \(denormd_lease_held\) == 0",
        }
        for what, pattern in required.items():
            if not re.search(pattern, exprs):
                problems.append(f"{path.name}: no panel shows {what} (/{pattern}/)")
        if not re.search(r"by \(source\) \(denormd_lag_seconds", exprs):
            problems.append(f"{path.name}: lag must be shown per source")
        print(f"{path.name}: {len(queries)} queries over {len(used)} of {len(exported)} metrics")

    # ---- alert rules ------------------------------------------------------------------------
    families = series_names({**exported, **added})
    for path in rule_files:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in doc.get("groups", []):
            for rule in group.get("rules", []):
                checked += 1
                where = f"{path.name}: {rule.get('alert') or rule.get('record')}"
                for name in metric_names(rule["expr"]):
                    if name not in families:
                        problems.append(f"{where}: {name!r} is neither in docs/metrics.md nor added by Prometheus")
                for p in label_problems(rule["expr"], families, labels_of, implicit):
                    problems.append(f"{where}: {p}")

    for p in problems:
        print("FAIL", p)
    print(f"metrics check: {checked} queries and rules, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
