"""Another revision beside this one, in one run: python3 -m tests.bench.compare REV [options].

Builds REV's denormd (and, with --server old or each, its test server) into a scratch folder
(git archive of REV, configured and built as scripts/test.sh does; kept, so a second run
reuses it), then runs the latency and catch-up measurements of tests/bench/e2e_bench.py for
both, round after round, alternating which goes first, each on a fresh test server with the
same seed and REV's sample mappings (the same work, in mappings both understand). It
prints, per figure, the median of each side's rounds, every round, and the
ratio this/REV, with whether the figure is better higher or lower: a regression shows as a
ratio on the wrong side of 1, whatever the machine's speed that day. The figures: copy and
recent at 1,000 and 5,000 source events/s (rate held, p50/p99 apply latency, CPU per event of
denormd and of the server, server commands and documents written per event), and the
catch-up (events/s, CPU per event, server commands per event, peak RSS).

By default both sides run against this revision's test server, so that only denormd differs
(--server old: REV's for both; each: each its own). --max-ratio R exits 1 when a figure that
is better lower is more than R times REV's (or one better higher less than 1/R): a guard to
run before an issue that touches the read or write path is resolved (docs/performance.md,
"Comparing revisions"). --old-build DIR takes REV's binaries from a build folder instead of
building (the CTest smoke run compares this build with itself)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (key in e2e_bench's results, label, True when higher is better)
FIGURES = []
for _kind in ("copy", "recent"):
    for _rate in (1000, 5000):
        _key = "latency.%s_%d" % (_kind, _rate)
        _name = "%s at %d/s" % (_kind, _rate)
        FIGURES += [
            (_key + ".achieved", _name + ": events/s written and applied", True),
            (_key + ".p50_ms", _name + ": apply latency p50 (ms)", False),
            (_key + ".p99_ms", _name + ": apply latency p99 (ms)", False),
            (_key + ".cpu_us_per_event.denormd", _name + ": denormd CPU µs per event", False),
            (_key + ".cpu_us_per_event.server", _name + ": server CPU µs per event", False),
            (_key + ".server_commands_per_event", _name + ": server commands per event", False),
            (_key + ".documents_written_per_event", _name + ": documents written per event", False),
        ]
FIGURES += [
    ("catch_up.events_per_s", "catch-up: source events/s", True),
    ("catch_up.cpu_us_per_event", "catch-up: denormd CPU µs per event", False),
    ("catch_up.server_cpu_us_per_event", "catch-up: server CPU µs per event", False),
    ("catch_up.server_commands_per_event", "catch-up: server commands per event", False),
    ("catch_up.documents_written_per_event", "catch-up: documents written per event", False),
    ("catch_up.rss_kib_peak", "catch-up: denormd peak RSS (KiB)", False),
]


def say(text):
    print(text, flush=True)


def run(cmd, **kw):
    say("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, **kw)


def resolve(rev):
    return subprocess.run(["git", "rev-parse", "--verify", rev + "^{commit}"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def build(rev, scratch, targets):
    """REV's binaries, built once into scratch/<sha>: {"denormd": path, "emulator": path}."""
    sha = resolve(rev)
    src = os.path.join(scratch, sha[:12], "src")
    out = os.path.join(scratch, sha[:12], "build")
    paths = {"denormd": os.path.join(out, "bin", "denormd"),
             "emulator": os.path.join(out, "tests", "emulator", "mongo-emulator")}
    if all(os.path.exists(paths[t]) for t in targets):
        say("%s: built already in %s" % (sha[:12], out))
        return sha, paths
    if not os.path.isdir(src):
        os.makedirs(src)
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit("git archive %s failed" % sha)
    flags = "-O2 -g1 -DNDEBUG"
    run(["cmake", "-S", src, "-B", out, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
         "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=" + flags, "-DCMAKE_C_FLAGS_RELWITHDEBINFO=" + flags],
        stdout=subprocess.DEVNULL)
    run(["ninja", "-C", out] + [{"denormd": "denormd", "emulator": "mongo-emulator"}[t] for t in targets])
    return sha, paths


def from_build(build_dir):
    return {"denormd": os.path.join(build_dir, "bin", "denormd"),
            "emulator": os.path.join(build_dir, "tests", "emulator", "mongo-emulator")}


def bench_once(denormd, emulator, args, samples):
    """One e2e_bench run of the latency and catch-up measurements, with the sample mappings in
    `samples` (None: this revision's); its results."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, "-m", "tests.bench.e2e_bench", "--only", "latency,catch_up", "--skip-baseline",
           "--json", out, "--latency-rounds", "1"]
    if args.quick:
        cmd.append("--quick")
    if args.backlog:
        cmd += ["--backlog", str(args.backlog)]
    env = dict(os.environ, DENORMD_BIN=denormd, DENORMD_EMULATOR=emulator, PYTHONDONTWRITEBYTECODE="1")
    if samples:
        env["DENORMD_SAMPLE_MAPPINGS"] = samples
    say("$ DENORMD_BIN=%s DENORMD_EMULATOR=%s %s" % (denormd, emulator, " ".join(cmd[1:])))
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL if not args.verbose else None)
    with open(out) as f:
        results = json.load(f)
    os.unlink(out)
    return results["denormd"]


def pick(results, key):
    v = results
    for part in key.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v if isinstance(v, (int, float)) else None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(rev, sha, rounds, max_ratio):
    """The Markdown table of every figure, and the figures past --max-ratio."""
    lines = ["| figure | %s (median; rounds) | this revision (median; rounds) | this / %s |" % (rev, rev),
             "|---|---|---|---|"]
    regressions = []
    for key, label, higher_better in FIGURES:
        old = [pick(r, key) for r in rounds["old"]]
        new = [pick(r, key) for r in rounds["new"]]
        mo, mn = median(old), median(new)
        if mo is None and mn is None:
            continue
        ratio = (mn / mo) if mo not in (None, 0) and mn is not None else None

        def cell(m, values):
            return "%s; %s" % (fmt(m), ", ".join(fmt(v) for v in values))
        mark = ""
        if ratio is not None:
            worse = ratio < 1 if higher_better else ratio > 1
            mark = " (%s)" % ("worse" if worse and abs(ratio - 1) > 0.05 else
                              "better" if not worse and abs(ratio - 1) > 0.05 else "same")
            if max_ratio and (ratio > max_ratio if not higher_better else ratio < 1 / max_ratio):
                regressions.append(label)
        lines.append("| %s %s | %s | %s | %s%s |" % (label, "↑" if higher_better else "↓", cell(mo, old),
                                                     cell(mn, new), "%.2f" % ratio if ratio is not None else "–",
                                                     mark))
    return "\n".join(lines) + "\n", regressions


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, float) and v < 100:
        return "%.2f" % v if v < 10 else "%.1f" % v
    return "{:,}".format(int(round(v)))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tests.bench.compare", description=__doc__.split("\n")[0])
    p.add_argument("rev", help="the revision to compare with (a commit, tag or branch)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    p.add_argument("--server", choices=("new", "old", "each"), default="new",
                   help="whose test server: this revision's for both (default), REV's for both, or each its own")
    p.add_argument("--scratch", default=os.path.join(ROOT, "build", "compare"),
                   help="where REV is built (default build/compare)")
    p.add_argument("--old-build", help="REV's binaries from this build folder instead of building")
    p.add_argument("--quick", action="store_true", help="seconds-long rounds (the CTest smoke run)")
    p.add_argument("--backlog", type=int, help="catch-up backlog per round (default e2e_bench's)")
    p.add_argument("--max-ratio", type=float, help="exit 1 when a figure is worse than REV's by more than this")
    p.add_argument("--markdown", help="write the table here too")
    p.add_argument("--json", help="write every round's results here")
    p.add_argument("--verbose", action="store_true", help="show the benchmark's own output")
    args = p.parse_args(argv)

    build_dir = os.environ.get("DENORMD_BUILD_DIR", os.path.join(ROOT, "build"))
    new = from_build(os.path.abspath(build_dir))
    targets = ["denormd"] + (["emulator"] if args.server != "new" else [])
    if args.old_build:
        sha, old = resolve(args.rev), from_build(os.path.abspath(args.old_build))
    else:
        sha, old = build(args.rev, os.path.abspath(args.scratch), targets)
    # Both sides run REV's sample mappings when its source is at hand: the same work, in
    # mappings the older binary understands (newer samples may use what it does not know).
    samples = os.path.join(os.path.abspath(args.scratch), sha[:12], "src", "mappings")
    samples = samples if not args.old_build and os.path.isdir(samples) else None
    emulators = {"new": new["emulator"], "old": old["emulator"]}
    servers = {"old": emulators[{"new": "new", "old": "old", "each": "old"}[args.server]],
               "new": emulators[{"new": "new", "old": "old", "each": "new"}[args.server]]}
    binaries = {"old": old["denormd"], "new": new["denormd"]}
    rounds = {"old": [], "new": []}
    began = time.time()
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for side in order:
            say("round %d/%d: %s" % (r + 1, args.rounds, "REV " + sha[:12] if side == "old" else "this revision"))
            rounds[side].append(bench_once(binaries[side], servers[side], args, samples))
    text, regressions = table(args.rev, sha, rounds, args.max_ratio)
    header = ("Compared %s (%s) with this revision, %d round(s) each, alternating, %s test server; %d s.\n\n"
              % (args.rev, sha[:12], args.rounds,
                 {"new": "this revision's", "old": "%s's" % args.rev, "each": "each its own"}[args.server],
                 time.time() - began))
    say("\n" + header + text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rev": args.rev, "sha": sha, "server": args.server, "rounds": rounds}, f, indent=1)
    if regressions:
        say("worse than %s by more than %.2f: %s" % (args.rev, args.max_ratio, ", ".join(regressions)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
