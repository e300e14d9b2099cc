"""Every command the docs show runs here, or is listed as skipped by name.

The shell examples are read from README.md and docs/*.md as they stand (fenced blocks marked
`sh`, and transcripts whose lines start with `$ `), so a changed example is what runs. Each is
claimed by one test below by its first command; an example no test claims fails
`test_every_example_is_claimed`, so a new example cannot go untested. Where a transcript shows
output, the real output must have the same shape: every shown line, in order, with numbers,
times, durations and hex digests free and `...` standing for anything.
Commands written inline in the prose (`denormd verify --repair`) must name a command and flags
that exist, and the scripts and modules they name must exist. docs/running.md's table of flags
is `--help`'s. README.md is a front door: short, and linking every page of docs/; every relative
link of the docs reaches a file, and a heading where it names one."""
import collections
import glob
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import pymongo

from tests.integration import seed as shop_seed
from tests.integration.harness import DENORMD, EMULATOR, SOURCE_DIR, Emulator, free_port, wait_until

Example = collections.namedtuple("Example", "where info text commands")

# First command of an example (a regular expression) -> the test that runs it, or why it cannot
# run here.
CLAIMS = [
    (r"^scripts/demo\.sh", "test_quick_start"),
    (r"^denormd check --mappings bad/", "test_check_names_the_bad_key"),
    (r"^denormd plan ", "test_plan_prints_the_documented_writes"),
    (r"^denormd run ", "test_run_examples_start_and_stop"),
    (r"^denormd backfill ", "test_backfill_continues_as_shown"),
    (r"^denormd verify$", "test_verify_reports_drift_as_shown"),
    (r"^denormd status$", "test_status_as_shown"),
    (r"^denormd cost ", "test_cost_as_shown"),
    (r"^curl -fsS \"http://127\.0\.0\.1:9464/applied", "test_applied_as_shown"),
    (r"^kill -HUP ", "test_reload_calls"),
    (r"^openssl req -x509 ", "test_securing_the_http_port_as_shown"),
    (r"^python3 -c 'import socket", "test_garbage_server_aborts_as_documented"),
    (r"^scripts/test\.sh +# or any build", "test_benchmark_command_is_accepted"),
    (r"^DENORMD_BUILD_DIR=build /usr/bin/python3 -m tests\.bench\.compare ", "test_compare_command_is_accepted"),
    (r"^docker compose up", "skip: needs Docker (tests/deploy checks the compose file and the images)"),
    (r"^docker build ", "skip: needs Docker (its denormd arguments run in test_run_examples_start_and_stop)"),
    (r"^DENORMD_BUILD_DIR=build /usr/bin/python3 -m tests\.soak ",
     "skip: minutes long; ctest soak_short runs the same command with a fixed seed for 30 s"),
    (r"^# SCRAM user", "skip: needs a real cluster with TLS, x.509 and a DNS seed list"),
]
SHELL_INFOS = ("sh", "bash", "shell", "console")


def doc_files():
    return [os.path.join(SOURCE_DIR, "README.md")] + sorted(glob.glob(os.path.join(SOURCE_DIR, "docs", "*.md")))


def fenced_blocks(path):
    """(line, info, text) of each fenced block of a Markdown file."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        out.append((start, info, "\n".join(body)))
        i += 1
    return out


def commands_of(info, text):
    """[(command, [shown output lines])]: a transcript's `$ ` lines with the lines after each;
    otherwise every line of a shell block (continuations joined, comments dropped)."""
    lines = text.split("\n")
    if any(line.startswith("$ ") for line in lines):
        out = []
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:].strip(), []))
            elif out and line.strip():
                out[-1][1].append(line)
        return out
    out, pending = [], ""
    for line in lines:
        pending += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if line.endswith("\\"):
            continue
        if pending:
            out.append((pending.strip(), []))
        pending = ""
    return out


def shell_examples():
    found = []
    for path in doc_files():
        for line, info, text in fenced_blocks(path):
            transcript = any(t.startswith("$ ") for t in text.split("\n"))
            if info in SHELL_INFOS or (info == "" and transcript):
                where = "%s:%d" % (os.path.relpath(path, SOURCE_DIR), line)
                found.append(Example(where, info, text, commands_of(info, text)))
    return found


def claim_of(example):
    first = example.commands[0][0] if example.commands else ""
    hits = [claim for pattern, claim in CLAIMS if re.search(pattern, first)]
    return hits


def examples_for(test):
    out = [e for e in shell_examples() if claim_of(e) == [test]]
    assert out, "no example in the docs is claimed by %s any more: remove the test or its claim" % test
    return out


# ---- the shape of shown output -----------------------------------------------------------------
SHAPES = [
    (r"\.\.\.", r".*"),
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"),
    (r"\b[0-9a-f]*\d[0-9a-f]*[a-f][0-9a-f]*\b|\b[0-9a-f]*[a-f][0-9a-f]*\d[0-9a-f]*\b(?=[^\w]|$)",
     r"[0-9a-f]+"),
    (r"\b(?:\d+(?:ms|[dhms]))+\b", r"(?:\d+(?:ms|[dhms]))+"),
    (r"\d[\d,]*(?:\.\d+)?", r"\d[\d,]*(?:\.\d+)?"),
]


def shape(line):
    """A regular expression for a shown output line: literal text, with its values free."""
    out, i = "", 0
    while i < len(line):
        for pattern, free in SHAPES:
            m = re.compile(pattern).match(line, i)
            if m and m.end() > i:
                out += free
                i = m.end()
                break
        else:
            out += re.escape(line[i])
            i += 1
    return out


def assert_shape(test, shown, actual, what):
    """Every shown line matches an actual line, in order."""
    actual_lines = actual.split("\n")
    at = 0
    for line in shown:
        rx = re.compile(shape(line) + r"$")
        while at < len(actual_lines) and not rx.match(actual_lines[at]):
            at += 1
        if at == len(actual_lines):
            test.fail("%s: the documented line\n  %s\nhas no line of that shape (in that order) in the output:\n%s"
                      % (what, line, actual))
        at += 1


class ShapeTest(unittest.TestCase):
    """The shape matcher itself: values are free, words are not."""

    def test_values_are_free_and_words_are_not(self):
        rx = re.compile(shape("orders-customer: 8,200 document(s) (continued after _id 11800; 20,000 in all), done") + "$")
        self.assertTrue(rx.match("orders-customer: 3 document(s) (continued after _id 7; 10 in all), done"))
        self.assertFalse(rx.match("orders-customer: 3 document(s), done"))
        self.assertFalse(rx.match("orders-customers: 3 document(s) (continued after _id 7; 10 in all), done"))
        rx = re.compile(shape("  history headroom 3h12m (until the oldest entry passes it), fingerprint 3f2a9c0d1e4b5a67") + "$")
        self.assertTrue(rx.match("  history headroom 41s (until the oldest entry passes it), fingerprint 0badc0de00000001"))
        self.assertFalse(rx.match("  history headroom none (until the oldest entry passes it), fingerprint 0badc0de00000001"))
        rx = re.compile(shape("error: bad/x.json: /feilds: unknown key; allowed here: ...") + "$")
        self.assertTrue(rx.match("error: bad/x.json: /feilds: unknown key; allowed here: a, b"))

    def test_transcripts_and_blocks_split_into_commands(self):
        self.assertEqual(commands_of("", "$ denormd status\nline 1\n\nline 2\n$ true"),
                         [("denormd status", ["line 1", "line 2"]), ("true", [])])
        self.assertEqual(commands_of("sh", "denormd run --uri x \\\n   --db shop   # note\necho hi"),
                         [("denormd run --uri x --db shop   # note", []), ("echo hi", [])])


class ComputedOperatorsTest(unittest.TestCase):
    """docs/computed-fields.md's table of the operators computed fields allow is the loader's table."""

    def test_the_docs_list_the_loaders_operators_by_family(self):
        with open(os.path.join(SOURCE_DIR, "src", "mapping", "computed_expression.cc")) as f:
            table = f.read()
        table = table[table.index("operators = {{"):table.index("}};")]
        loader = collections.defaultdict(set)
        for name, family in re.findall(r'\{"(\$\w+)", F::(\w+),', table):
            loader[family].add(name)
        self.assertGreater(sum(len(v) for v in loader.values()), 40)
        with open(os.path.join(SOURCE_DIR, "docs", "computed-fields.md")) as f:
            section = f.read()
        family_of = {name: family for family, names in loader.items() for name in names}
        listed = collections.defaultdict(set)
        for families, ops in re.findall(r"(?m)^\| ([a-z, ]+) \| ((?:`\$\w+` ?)+)\|$", section):
            for name in re.findall(r"`(\$\w+)`", ops):
                family = family_of.get(name, "(none: not allowed)")
                self.assertIn(family, [x.strip() for x in families.split(",")],
                              "docs/computed-fields.md lists %s under %r; the loader has it under %s"
                              % (name, families, family))
                listed[family].add(name)
        self.maxDiff = None
        self.assertEqual(dict(listed), dict(loader),
                         "docs/computed-fields.md's operators differ from computed_expression.cc's")


# ---- flags -------------------------------------------------------------------------------------
COMMANDS = ("run", "check", "plan", "backfill", "verify", "status", "cost")
HELP_ROW = re.compile(r"(?m)^  (--[a-z-]+)(?: \S+)?\s+.*\(default: ([^)]*)\)$")


def help_rows(command):
    """[(flag, default)] of `denormd COMMAND --help`."""
    out = subprocess.run([DENORMD, command, "--help"], capture_output=True, text=True, timeout=30).stdout
    return HELP_ROW.findall(out)


def flags_table(path):
    """{(flag, command): default} from the table under '## Flags' of docs/running.md."""
    with open(path) as f:
        text = f.read()
    section = text[text.index("\n## Flags\n"):]
    section = section[:section.index("\n## ", 1)]
    out = {}
    for flag, commands, default in re.findall(
            r"(?m)^\| `(--[a-z-]+)(?: [^`|]*)?` \| ([a-z, ]+) \| .* \| ([^|]*) \|$", section):
        for command in commands.split(","):
            out[(flag, command.strip())] = default.strip().replace("`", "")
    return out


class FlagsTest(unittest.TestCase):
    """docs/running.md's table of flags is what each command's --help lists, defaults included,
    and a default the prose states anywhere is --help's."""

    def test_the_flags_table_is_the_help(self):
        table = flags_table(os.path.join(SOURCE_DIR, "docs", "running.md"))
        helps = {}
        for command in COMMANDS:
            rows = help_rows(command)
            self.assertTrue(rows, "denormd %s --help lists no flag with a default" % command)
            for flag, default in rows:
                helps[(flag, command)] = default
        self.maxDiff = None
        self.assertEqual(sorted("%s of denormd %s (default: %s)" % (f, c, d) for (f, c), d in helps.items()
                                if (f, c) not in table), [],
                         "docs/running.md, Flags: add these to the table (a row, or the command to a row)")
        self.assertEqual(sorted("%s of denormd %s" % k for k in table if k not in helps), [],
                         "docs/running.md, Flags: the table lists flags --help does not")
        for (flag, command), default in helps.items():
            self.assertEqual(table[(flag, command)], default, "docs/running.md, Flags: %s of denormd %s"
                             % (flag, command))

    def test_defaults_stated_in_the_prose_are_the_help_defaults(self):
        text = ""
        for path in doc_files():
            with open(path) as f:
                text += f.read() + "\n"
        checked = 0
        for command in COMMANDS:
            for flag, default in help_rows(command):
                self.assertRegex(text, re.escape(flag) + r"(?![\w-])", "the docs never name %s" % flag)
                for said in re.findall(re.escape(flag) + r"`?,? \(?default ([0-9][\w.:]*)", text):
                    self.assertEqual(said, default, "the docs say %s defaults to %s; denormd %s --help says %s"
                                     % (flag, said, command, default))
                    checked += 1
        self.assertGreater(checked, 3)


# ---- the front door and the links ----------------------------------------------------------------
README_MAX_LINES = 260


def without_code(text):
    """Markdown text without fenced blocks; code spans emptied (a link's text may be code)."""
    text = re.sub(r"(?ms)^```.*?^```[^\n]*$", "", text)
    return re.sub(r"`[^`\n]*`", "``", text)


def link_targets(path):
    with open(path) as f:
        return re.findall(r"\]\(([^()\s]+)\)", without_code(f.read()))


def heading_anchors(path):
    """The anchors GitHub gives a Markdown file's headings."""
    with open(path) as f:
        text = re.sub(r"(?ms)^```.*?^```[^\n]*$", "", f.read())
    seen, out = collections.Counter(), set()
    for heading in re.findall(r"(?m)^#{1,6} +(.+?)\s*$", text):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        out.add("%s-%d" % (slug, seen[slug]) if seen[slug] else slug)
        seen[slug] += 1
    return out


class FrontDoorTest(unittest.TestCase):
    """README.md is a front door: short, linking every page of docs/, which docs/README.md
    lists; every relative link of the docs reaches its file, and its heading."""

    def docs_pages(self):
        pages = sorted(os.path.basename(p) for p in glob.glob(os.path.join(SOURCE_DIR, "docs", "*.md")))
        self.assertGreater(len(pages), 8)
        return pages

    def test_the_readme_is_short(self):
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            lines = f.read().rstrip("\n").count("\n") + 1
        self.assertLessEqual(lines, README_MAX_LINES, "README.md has %d lines: move reference to docs/" % lines)

    def test_the_readme_links_every_docs_page(self):
        linked = {t.split("#")[0] for t in link_targets(os.path.join(SOURCE_DIR, "README.md"))}
        self.assertEqual([p for p in self.docs_pages() if "docs/" + p not in linked], [],
                         "README.md does not link these pages of docs/")

    def test_the_docs_index_lists_every_page(self):
        linked = {t.split("#")[0] for t in link_targets(os.path.join(SOURCE_DIR, "docs", "README.md"))}
        self.assertEqual([p for p in self.docs_pages() if p != "README.md" and p not in linked], [],
                         "docs/README.md does not list these pages")

    def test_relative_links_reach_their_targets(self):
        checked = 0
        for path in doc_files():
            where = os.path.relpath(path, SOURCE_DIR)
            for target in link_targets(path):
                if re.match(r"^[a-z]+:", target):
                    continue
                file_part, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                self.assertTrue(os.path.exists(resolved), "%s: the link %s reaches no file" % (where, target))
                if anchor and resolved.endswith(".md"):
                    self.assertIn(anchor, heading_anchors(resolved),
                                  "%s: the link %s names no heading of %s" % (where, target,
                                                                          os.path.relpath(resolved, SOURCE_DIR)))
                checked += 1
        self.assertGreater(checked, 30)


# ---- running examples ----------------------------------------------------------------------------
def strip_comment(command):
    return re.sub(r"\s+#.*$", "", command)


class DocsTest(unittest.TestCase):
    """Each test runs the examples it claims, in a scratch folder with `denormd` on the PATH,
    DENORMD_URI naming a fresh test server and `mappings/` holding the sample mappings."""

    def setUp(self):
        self.emulator = Emulator()
        self.uri = self.emulator.uri
        self.dir = tempfile.mkdtemp(prefix="denormd-docs-")
        shutil.copytree(os.path.join(SOURCE_DIR, "mappings"), os.path.join(self.dir, "mappings"))
        self.env = dict(os.environ, DENORMD_URI=self.uri,
                        PATH=os.path.dirname(os.path.abspath(DENORMD)) + os.pathsep + os.environ["PATH"])
        self.client = pymongo.MongoClient(self.uri)
        self.procs = []
        self.ran = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.client.close()
        self.emulator.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def sh(self, command, timeout=120):
        """Runs one documented command with bash; returns (exit code, stdout, stderr)."""
        self.ran.append(command)
        p = subprocess.run(["bash", "-c", command], cwd=self.dir, env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def run_as_shown(self, example, command, shown, code=0):
        """Runs a documented command; its exit code must be `code` and its output the shown shape."""
        rc, out, err = self.sh(command, timeout=180)
        self.assertEqual(rc, code, "%s: `%s`: %s" % (example.where, command, err))
        assert_shape(self, shown, out, example.where)

    def stop(self, daemon):
        daemon.send_signal(signal.SIGTERM)
        self.assertEqual(daemon.wait(15), 0)

    def keep_mappings(self, *names):
        for f in os.listdir(os.path.join(self.dir, "mappings")):
            if f[:-5] not in names:
                os.remove(os.path.join(self.dir, "mappings", f))

    def daemon(self, *flags):
        """`denormd run` on this folder's mappings and the test server; returns (process, port)."""
        port = free_port()
        log = open(os.path.join(self.dir, "denormd-%d.log" % port), "w")
        self.addCleanup(log.close)
        p = subprocess.Popen([DENORMD, "run", "--mappings", "mappings", "--metrics-addr", "127.0.0.1:%d" % port,
                              *flags], cwd=self.dir, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(p)
        self.wait_ready(p, port)
        return p, port

    def wait_ready(self, proc, port, timeout=30):
        def ready():
            if proc.poll() is not None:
                raise AssertionError("denormd exited with %s before it was ready" % proc.returncode)
            return http_get(port, "/readyz")[0] == 200
        wait_until(ready, timeout=timeout, message="denormd ready on port %d" % port)

    # -- the quick start ---------------------------------------------------------------------------
    def test_quick_start(self):
        (example,) = examples_for("test_quick_start")
        commands = [strip_comment(c) for c, _ in example.commands]
        self.assertEqual(commands, ["scripts/demo.sh", "scripts/test.sh"], example.where)
        for c in commands:
            path = os.path.join(SOURCE_DIR, c)
            self.assertTrue(os.access(path, os.X_OK), "%s: %s is not an executable file" % (example.where, c))
        # CI runs exactly the README's test command; the ctest `demo` runs what demo.sh runs.
        with open(os.path.join(SOURCE_DIR, ".ci", "run")) as f:
            self.assertRegex(f.read(), r"(?m)^scripts/test\.sh\s*$")
        with open(os.path.join(SOURCE_DIR, "scripts", "demo.sh")) as f:
            self.assertIn("scripts/demo.py", f.read())
        with open(os.path.join(SOURCE_DIR, "tests", "integration", "CMakeLists.txt")) as f:
            self.assertRegex(f.read(), r"add_test\(NAME demo COMMAND /usr/bin/python3 scripts/demo\.py")

    # -- commands with output ------------------------------------------------------------------------
    def test_check_names_the_bad_key(self):
        (example,) = examples_for("test_check_names_the_bad_key")
        (command, shown), = example.commands
        # The docs' own orders-customer example, with the typo the transcript reports.
        mapping = json.loads(self.doc_mapping("orders-customer"))
        mapping["feilds"] = mapping.pop("fields")
        os.mkdir(os.path.join(self.dir, "bad"))
        with open(os.path.join(self.dir, "bad", "orders.json"), "w") as f:
            json.dump(mapping, f)
        rc, out, err = self.sh(command)
        self.assertEqual(rc, 2, err)
        assert_shape(self, shown, out + err, example.where)

    def doc_mapping(self, name):
        """The full mapping named `name` as docs/mappings.md shows it."""
        for _, info, text in fenced_blocks(os.path.join(SOURCE_DIR, "docs", "mappings.md")):
            if info == "json" and '"name": "%s"' % name in text:
                return text
        self.fail("docs/mappings.md shows no mapping named %s" % name)

    def test_plan_prints_the_documented_writes(self):
        (example,) = examples_for("test_plan_prints_the_documented_writes")
        (command, shown), = example.commands
        self.assertRegex(command, r"--events docs/examples/\S+\.jsonl")
        shutil.copytree(os.path.join(SOURCE_DIR, "docs", "examples"), os.path.join(self.dir, "docs", "examples"))
        rc, out, err = self.sh(command)
        self.assertEqual(rc, 0, err)
        # The planner is pure: the documented writes are exactly what it prints.
        self.assertEqual(out.strip().split("\n"), shown, "%s: the output of `%s` changed" % (example.where, command))

    def test_backfill_continues_as_shown(self):
        (example,) = examples_for("test_backfill_continues_as_shown")
        (command, shown), = example.commands
        names = re.findall(r"--mapping (\S+)", command)
        self.keep_mappings(*names)
        customers = 10000
        db = self.client.shop
        db.customers.insert_many([{"_id": i, "name": "Customer %d" % i, "email": "c%d@example.com" % i,
                                   "address": {"city": "Oslo"}} for i in range(1, customers + 1)])
        db.orders.insert_many([{"_id": i, "customerId": (i + 1) // 2, "status": "NEW", "total": i % 500,
                                "createdAt": shop_seed.when(i), "items": []} for i in range(1, 2 * customers + 1)])
        db.orders.create_index("customerId")
        # The transcript shows a backfill that was stopped and runs again: stop one part-way.
        first = subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.dir, env=self.env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(first)
        state = self.client.denormd.denormd_backfill

        def part_way():
            p = state.find_one({"_id": names[0]})
            return p is not None and p["documents"] >= 1000
        wait_until(part_way, timeout=120, interval=0.01, message="a few batches of " + names[0])
        first.send_signal(signal.SIGTERM)
        first.wait(30)
        self.assertFalse(state.find_one({"_id": names[0]})["done"], "the first run finished before it was stopped")
        self.run_as_shown(example, command, shown)

    def small_shop(self):
        db = self.client.shop
        shop_seed.seed_shop(db, random.Random(3), customers=50, products=10, orders=200, hosts=2, logmsgs=10,
                            reviews=40, indexes=True)
        return db

    def drifted_shop(self):
        """A small shop whose copies and arrays are right but for a few drifted orders, and an
        order whose customer does not exist."""
        db = self.small_shop()
        rc, _, err = self.sh("denormd backfill")
        self.assertEqual(rc, 0, err)
        open_orders = [o["_id"] for o in db.orders.find({"status": {"$nin": ["DELIVERED", "CANCELLED"]}}).limit(3)]
        db.orders.update_one({"_id": open_orders[0]}, {"$set": {"customer.name": "stale"}})
        db.orders.update_one({"_id": open_orders[1]}, {"$set": {"customer.email": "x", "customer.city": "y"}})
        db.orders.update_one({"_id": open_orders[2]}, {"$set": {"customerId": 999}})
        return db

    def test_verify_reports_drift_as_shown(self):
        (example,) = examples_for("test_verify_reports_drift_as_shown")
        (command, shown), = example.commands
        self.keep_mappings(*re.findall(r"(?m)^(\S+) \((?:copy|recent|aggregate) ", "\n".join(shown)))
        self.drifted_shop()
        self.run_as_shown(example, command, shown, code=3)

    def test_status_as_shown(self):
        (example,) = examples_for("test_status_as_shown")
        (command, shown), = example.commands
        names = re.findall(r"(?m)^  (\S+): fingerprint ", "\n".join(shown))
        self.keep_mappings(*names)
        m = re.search(r"lease: held by (\S+),", "\n".join(shown))
        self.small_shop()
        # As the transcript shows: --ha, and the first mapping's backfill left to `denormd backfill`.
        daemon, _ = self.daemon("--ha", "--instance-id", m.group(1), "--no-auto-backfill")
        rc, _, err = self.sh("denormd backfill --mapping " + names[1])
        self.assertEqual(rc, 0, err)
        self.client.shop.customers.update_one({"_id": 1}, {"$set": {"name": "Ann"}})
        wait_until(lambda: self.client.denormd.denormd_checkpoints.find_one({"_id": "shop.customers"}) is not None,
                   timeout=20, message="a checkpoint of shop.customers")
        # Its heartbeat names what it holds and reports its streams from the round after it
        # took them.
        wait_until(lambda: self.client.denormd.denormd_instances.find_one(
            {"_id": m.group(1), "units": "shop.customers",
             "report.units": {"$elemMatch": {"unit": "shop.customers", "streaming": True}}}) is not None,
                   timeout=20, message="a report of shop.customers")
        self.run_as_shown(example, command, shown)
        self.stop(daemon)

    def test_cost_as_shown(self):
        """docs/cost.md's shop: customer 7 with 5,000 more open orders, orders read 150 times a
        second and a customer renamed every 2 seconds; first before `run` (the changes from
        `top`), then with it (`--metrics-url`)."""
        examples = examples_for("test_cost_as_shown")
        commands = [c for e in examples for c in e.commands]
        names = sorted({n for command, _ in commands for n in re.findall(r"--mapping (\S+)", command)})
        self.keep_mappings(*names)
        db = self.small_shop()
        c = db.customers.find_one({"_id": 7})
        p = db.products.find_one({"_id": 1})
        db.orders.insert_many([shop_seed.order(100000 + i, c, [shop_seed.order_item(p, 1)], "NEW",
                                               shop_seed.when(100000 + i)) for i in range(5000)])
        stop = threading.Event()

        def workload():
            r, next_rename = random.Random(9), time.time()
            while not stop.is_set():
                if time.time() >= next_rename:
                    db.customers.update_one({"_id": r.choice([i for i in range(1, 51) if i != 7])},
                                            {"$set": {"name": "Renamed %d" % r.randint(1, 10**6)}})
                    next_rename += 2
                list(db.orders.find({"customerId": r.randint(1, 50)}).limit(5))
                time.sleep(1 / 150)
        t = threading.Thread(target=workload)
        t.start()
        daemon = None
        try:
            for example in examples:
                for command, shown in example.commands:
                    if "--metrics-url" in command and daemon is None:
                        daemon, port = self.daemon("--no-auto-backfill")
                    if daemon is not None:
                        command = command.replace(":9464/", ":%d/" % port)
                    self.run_as_shown(example, command, shown)
        finally:
            stop.set()
            t.join()
        self.assertIsNotNone(daemon, "the docs show no cost with --metrics-url")
        self.stop(daemon)

    def test_applied_as_shown(self):
        (example,) = examples_for("test_applied_as_shown")
        (command, shown), = example.commands
        self.keep_mappings(re.search(r"mapping=([\w-]+)", command).group(1))
        daemon, port = self.daemon()
        with self.client.start_session() as s:
            self.client.shop.customers.insert_one({"_id": 1, "name": "Ann"}, session=s)
            t = s.operation_time
        command = re.sub(r"after=\d+:\d+", "after=%d:%d" % (t.time, t.inc), command).replace(":9464/", ":%d/" % port)
        self.run_as_shown(example, command, shown)
        self.stop(daemon)

    def test_securing_the_http_port_as_shown(self):
        """The certificate, the hash and the documented web.yml, with denormd and curl as shown."""
        (example,) = examples_for("test_securing_the_http_port_as_shown")
        openssl, hash_command, run, curl = [strip_comment(c) for c, _ in example.commands]
        web_yml = next(text for _, info, text in fenced_blocks(os.path.join(SOURCE_DIR, "docs", "operations.md"))
                       if info == "yaml" and "basic_auth_users:" in text)
        password = re.search(r'here of "([^"]+)"', web_yml).group(1)
        with open(os.path.join(self.dir, "web.yml"), "w") as f:
            f.write(web_yml)
        with open(os.path.join(self.dir, "prometheus.password"), "w") as f:
            f.write(password + "\n")
        rc, _, err = self.sh(openssl)
        self.assertEqual(rc, 0, "%s: `%s`: %s" % (example.where, openssl, err))
        rc, out, err = self.sh(hash_command.replace("scripts/", os.path.join(SOURCE_DIR, "scripts") + "/"))
        self.assertEqual(rc, 0, err)
        self.assertRegex(out.strip(), r"^\$2b\$10\$[./A-Za-z0-9]{53}$")
        # denormd with the documented file: its hash must be the documented password's.
        port = free_port()
        self.assertTrue(run.endswith("&"), run)
        run = re.sub(r"--metrics-addr \S+", "--metrics-addr 127.0.0.1:%d" % port,
                     run[:-1].strip().replace("/etc/denormd/mappings", "mappings"))
        log = open(os.path.join(self.dir, "denormd-web.log"), "w")
        self.addCleanup(log.close)
        daemon = subprocess.Popen(["bash", "-c", "exec " + run], cwd=self.dir, env=self.env, stdout=log,
                                  stderr=subprocess.STDOUT)
        self.procs.append(daemon)
        curl = curl.replace("https://denormd.example.net:9464", "--resolve denormd.example.net:%d:127.0.0.1 "
                            "https://denormd.example.net:%d" % (port, port))
        self.ran.append(curl)

        def ready():
            if daemon.poll() is not None:
                raise AssertionError("`%s` exited %s" % (run, daemon.returncode))
            rc, out, _ = self.sh(curl)
            return rc == 0 and out == "ready\n"
        wait_until(ready, timeout=30, message="`%s` answering `ready`" % curl)
        rc, out, _ = self.sh(curl.replace('-u "prometheus:$(cat prometheus.password)" ', ""))
        self.assertEqual((rc, out), (0, "unauthorized\n"))
        rc, out, _ = self.sh("curl -sS http://127.0.0.1:%d/readyz" % port)
        self.assertEqual(out, "Client sent an HTTP request to an HTTPS server.\n")
        self.stop(daemon)

    def test_reload_calls(self):
        (example,) = examples_for("test_reload_calls")
        daemon, port = self.daemon("--web-enable-lifecycle")
        for command, shown in example.commands:
            command = command.replace("<pid>", str(daemon.pid)).replace(":9464/", ":%d/" % port)
            self.run_as_shown(example, command, shown)
        wait_until(lambda: metric(port, "denormd_mapping_reloads_total", 'result="ok"') >= len(example.commands),
                   timeout=20, message="every reload call counted")
        self.stop(daemon)

    def test_garbage_server_aborts_as_documented(self):
        (example,) = examples_for("test_garbage_server_aborts_as_documented")
        script = example.text.replace("27999", str(free_port()))
        rc, out, err = self.sh(script + "\nrc=$?; kill %1; exit $rc", timeout=60)
        self.assertEqual(rc, 134, err)
        self.assertIn("precondition failed", err)

    def test_run_examples_start_and_stop(self):
        examples = examples_for("test_run_examples_start_and_stop")
        docker = [e for e in shell_examples() if claim_of(e) and claim_of(e)[0].startswith("skip: needs Docker (its")]
        commands = [c for e in examples for c, _ in e.commands]
        for e in docker:  # the image's entrypoint is denormd: its arguments follow the image name
            for c, _ in e.commands:
                m = re.search(r"denormd:\S+ (run .*)$", c)
                if m:
                    commands.append("denormd " + m.group(1))
        self.assertGreaterEqual(len(commands), 3)
        for command in commands:
            port = free_port()
            command = re.sub(r"--uri \"mongodb://[^\"]*\"", "--uri \"%s\"" % self.uri, strip_comment(command))
            command = command.replace("/etc/denormd/mappings", "mappings")
            command = re.sub(r"--metrics-addr \S+", "--metrics-addr 127.0.0.1:%d" % port, command)
            if "--metrics-addr" not in command:
                command += " --metrics-addr 127.0.0.1:%d" % port
            self.ran.append(command)
            p = subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.dir,
                                 env=dict(self.env, URI=self.uri), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
            self.procs.append(p)
            try:
                self.wait_ready(p, port)
            except AssertionError:
                self.fail("`%s` did not get ready:\n%s" % (command, p.communicate(timeout=10)[0]))
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(15), 0, command)

    def test_benchmark_command_is_accepted(self):
        """The full benchmark takes ten minutes; its flags must exist, and its --quick form runs
        in CI as the ctest e2e_bench_smoke."""
        (example,) = examples_for("test_benchmark_command_is_accepted")
        bench = [strip_comment(c) for c, _ in example.commands if "tests.bench.e2e_bench" in c]
        self.assertEqual(len(bench), 1, example.where)
        module = re.search(r"-m (\S+)", bench[0]).group(1)
        p = subprocess.run(["/usr/bin/python3", "-m", module, "--help"], cwd=SOURCE_DIR, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", bench[0]):
            self.assertIn(flag, p.stdout, "%s: %s has no flag %s" % (example.where, module, flag))
        with open(os.path.join(SOURCE_DIR, "tests", "bench", "CMakeLists.txt")) as f:
            self.assertIn("e2e_bench_smoke", f.read())

    def test_compare_command_is_accepted(self):
        """The comparison takes ten minutes; its flags must exist, and it runs in CI as the ctest
        compare_bench_smoke (this build beside itself)."""
        (example,) = examples_for("test_compare_command_is_accepted")
        (command, _), = example.commands
        p = subprocess.run(["/usr/bin/python3", "-m", "tests.bench.compare", "--help"], cwd=SOURCE_DIR,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", command):
            self.assertIn(flag, p.stdout, "%s: tests.bench.compare has no flag %s" % (example.where, flag))
        with open(os.path.join(SOURCE_DIR, "tests", "bench", "CMakeLists.txt")) as f:
            self.assertIn("compare_bench_smoke", f.read())

    # -- what nothing runs ---------------------------------------------------------------------------
    def test_every_example_is_claimed(self):
        skipped = []
        for e in shell_examples():
            claims = claim_of(e)
            first = e.commands[0][0] if e.commands else "(empty)"
            self.assertEqual(len(claims), 1, "%s: `%s` is claimed by %d tests (add it to CLAIMS in %s)"
                             % (e.where, first, len(claims), __file__))
            if claims[0].startswith("skip:"):
                skipped.append("%s `%s`: %s" % (e.where, first, claims[0][6:]))
        print("\nexamples skipped here:\n  " + "\n  ".join(skipped))
        claimed = {claim for e in shell_examples() for claim in claim_of(e)}
        for pattern, claim in CLAIMS:
            self.assertIn(claim, claimed, "no example matches %r any more" % pattern)

    def test_inline_commands_exist(self):
        """`denormd CMD --flag` in the prose names a command and flags that exist; scripts,
        modules and build outputs named there exist."""
        helps = {}
        checked = 0
        build = os.path.dirname(os.path.dirname(os.path.abspath(DENORMD)))
        for path in doc_files():
            with open(path) as f:
                text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
            where = os.path.relpath(path, SOURCE_DIR)
            for span in re.findall(r"`([^`\n]+)`", text):
                m = re.match(r"denormd (\w[\w-]*)((?: .*)?)$", span)
                if m and m.group(1) in COMMANDS:
                    cmd = m.group(1)
                    if cmd not in helps:
                        helps[cmd] = subprocess.run([DENORMD, cmd, "--help"], capture_output=True, text=True).stdout
                    for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", m.group(2)):
                        self.assertIn(flag, helps[cmd], "%s: `%s`: denormd %s has no flag %s" % (where, span, cmd, flag))
                    checked += 1
                elif m:
                    self.fail("%s: `%s`: denormd has no command %s" % (where, span, m.group(1)))
                for script in re.findall(r"(?:^|\s)(scripts/[\w.-]+)", span):
                    self.assertTrue(os.path.exists(os.path.join(SOURCE_DIR, script)), "%s: `%s`" % (where, span))
                    checked += 1
                for module in re.findall(r"python3 -m (tests\.[\w.]+)", span):
                    self.assertTrue(os.path.exists(os.path.join(SOURCE_DIR, *module.split(".")) + ".py"),
                                    "%s: `%s`: no module %s" % (where, span, module))
                    checked += 1
                for target in re.findall(r"(?:^|\s)build/(tests/[\w/-]+|bin/[\w-]+)", span):
                    self.assertTrue(os.path.exists(os.path.join(build, target)),
                                    "%s: `%s`: the build has no %s" % (where, span, target))
                    checked += 1
        self.assertGreater(checked, 20)


def http_get(port, path):
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def metric(port, name, labels=""):
    status, text = http_get(port, "/metrics")
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and labels in line or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


if __name__ == "__main__":
    unittest.main()
