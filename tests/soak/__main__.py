"""The soak test: /usr/bin/python3 -m tests.soak --seed S --minutes M [--ha] [--faults a,b]
[--exclude class,...] [--overload] [--lease-ttl-ms MS]. Starts the test server and denormd (tests/integration/harness.py starts
the processes; nothing there computes an expected value), writes a seeded random workload with
faults mixed in, and at each quiescent point compares every target of every mapping with what
tests/soak/oracle.py computes from the sources. Then `denormd verify` must exit 0. Liveness is
part of the verdict: at each quiescent point every instance must have applied everything
(`GET /applied`) within LIVENESS_S, whatever the load. --overload keeps twice as many busy
processes as the machine has cores running beside the whole run. Exit 0 when no mismatch and
no liveness failure was found, 1 otherwise."""
import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pymongo
from bson import json_util

from tests.integration.harness import DENORMD, Denormd, Emulator
from tests.soak import faults, generator, oracle

DB = "soak"
HERE = os.path.dirname(os.path.abspath(__file__))
HA_TRANSACTION_LIFETIME_S = 10  # the test server's transaction lifetime under --ha
SETTLE_S = 20  # how long a quiescent point waits for the copies to converge after /applied
LIVENESS_S = 180  # how long every pipeline may take to catch up after a step, whatever the load


class Run:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed * 7919 + 1)
        self.ops = args.ops
        self.notes = []
        self.mismatches = collections.OrderedDict()  # (mapping, id, field) -> first Mismatch
        self.checks = collections.Counter()
        self.injected = collections.Counter()
        self.liveness_failures = []  # (label, instance, seconds)
        self.burners = []
        if args.overload:
            # Busy processes, twice the cores, for the whole run: the machine stays saturated.
            for _ in range(2 * (os.cpu_count() or 2)):
                self.burners.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        faults.LEASE_TTL_MS = args.lease_ttl_ms
        emu_args = ["--oplog-max-events", str(faults.OPLOG_MAX_EVENTS)] if "lost-history" in args.fault_list else []
        # Odd seeds run the test server with MongoDB 8.x's change-stream read-preference knob: a
        # step-down then also kills denormd's change streams (6.0, even seeds, keeps them).
        self.kills_streams = args.seed % 2 == 1
        if self.kills_streams:
            emu_args += ["--setParameter", "internalChangeStreamRespectsReadPreference=true"]
        # Under --ha a killed holder leaves its fenced transaction open, and the server holds its
        # documents until it aborts it (docs/operations.md): 60 s by default, longer than a
        # check settles. 10 s, as an operator running --ha would set, keeps the wait short.
        if args.ha:
            emu_args += ["--transaction-lifetime-limit-seconds", str(HA_TRANSACTION_LIFETIME_S)]
        self.emulator = Emulator(*emu_args)
        self.client = pymongo.MongoClient(self.emulator.uri, serverSelectionTimeoutMS=10000)
        self.mapping_dir = tempfile.mkdtemp(prefix="soak-mappings-")
        for f in sorted(os.listdir(os.path.join(HERE, "mappings"))):
            shutil.copy(os.path.join(HERE, "mappings", f), self.mapping_dir)
        db = self.client[DB]
        for c in generator.COLLECTIONS:
            db.create_collection(c, changeStreamPreAndPostImages={"enabled": True})
        db.orders.create_index("customerId")
        db.orders.create_index("customerCode")
        db.orders.create_index("items.productId")
        db.customers.create_index("code")
        db.reviews.create_index("productId")
        self.workload = generator.Workload(self.client, DB, args.seed, args.exclude_list)
        self.daemons = []
        self.serial = 0

    # ---- processes ----
    def instance_args(self, name):
        """What every instance is started with besides the common flags: --ha and its name, and
        the --partitions of the run (the same on every instance)."""
        extra = ["--ha", "--instance-id", name, "--lease-ttl-ms", str(faults.LEASE_TTL_MS)] if self.args.ha else []
        for p in self.args.partitions:
            extra += ["--partitions", p]
        return extra

    def start_instance(self, name=None):
        self.serial += 1
        name = name or "soak-%d" % self.serial
        d = Denormd(self.emulator.uri, DB, self.mapping_dir, *self.instance_args(name), auto_backfill=True)
        d.name = name
        self.daemons.append(d)
        return d

    def restart(self, d):
        """Starts `d` again under its name (its old log is kept beside)."""
        if d.proc.poll() is None:
            return
        self.logs.append(d.log_path)
        i = self.daemons.index(d)
        self.serial -= 0
        n = Denormd(self.emulator.uri, DB, self.mapping_dir, *self.instance_args(d.name), auto_backfill=True)
        n.name = d.name
        self.daemons[i] = n

    def live(self):
        return [d for d in self.daemons if d.proc.poll() is None]

    def reload_all(self):
        for d in self.live():
            if self.rng.random() < 0.5:
                os.kill(d.proc.pid, signal.SIGHUP)
            else:
                import urllib.request
                try:
                    urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/-/reload" % d.port, method="POST"),
                                           timeout=30).read()
                except OSError as e:
                    self.note("reload via POST on %s failed: %s" % (d.name, e))

    def admin(self, cmd):
        self.client.admin.command(cmd)

    def note(self, text):
        self.notes.append(text)
        print("  note: " + text, flush=True)

    # ---- checking ----
    def mappings(self):
        out = []
        for f in sorted(os.listdir(self.mapping_dir)):
            with open(os.path.join(self.mapping_dir, f)) as fh:
                out.append(json_util.loads(fh.read()))
        return out

    def wait_applied(self, label):
        """Liveness: every live instance applies everything written so far within LIVENESS_S."""
        t = self.workload.last_time()
        if t is None:
            return
        began = time.time()
        deadline = began + LIVENESS_S
        for d in self.live():
            status = 0
            while time.time() < deadline and d.proc.poll() is None:
                try:
                    status, _ = d.get("/applied?after=%d:%d&timeout=5" % (t.time, t.inc))
                except OSError:
                    status = 0
                if status == 200:
                    break
                time.sleep(0.2)
            took = time.time() - began
            self.checks["slowest catch-up after a step (s)"] = max(
                self.checks["slowest catch-up after a step (s)"], int(took))
            if status != 200:
                self.liveness_failures.append((label, d.name, took))
                print("  LIVENESS: %s did not apply the step's writes within %d s (last status %s)"
                      % (d.name, LIVENESS_S, status), flush=True)

    def compare(self):
        def read(c):
            return list(self.client[DB][c].find({}))
        return oracle.check_all(self.mappings(), read)

    def quiesce_and_check(self, label):
        self.wait_applied(label)
        deadline = time.time() + SETTLE_S
        while True:
            found = self.compare()
            if not found or time.time() > deadline:
                break
            time.sleep(0.5)
        self.checks["quiescent checks"] += 1
        self.checks["target documents compared"] += sum(self.client[DB][c].count_documents({})
                                                        for c in ("orders", "products", "customers"))
        new = 0
        for m in found:
            k = (m.mapping, repr(m.id), m.field)
            if k not in self.mismatches:
                self.mismatches[k] = (label, m)
                new += 1
                print("  MISMATCH after %s: mapping %s, _id %r, field %s: expected %s, got %s"
                      % (label, m.mapping, m.id, m.field, m.expected[:300], m.got[:300]), flush=True)
        print("check after %-22s %d mismatch(es) (%d new)" % (label + ":", len(found), new), flush=True)
        return found

    def verify(self):
        """`denormd verify` over every mapping, with the daemons stopped; must exit 0."""
        for d in self.live():
            d.stop(timeout=20)
        names = [m["name"] for m in self.mappings()]
        cmd = [DENORMD, "verify", "--uri", self.emulator.uri, "--db", DB, "--mappings", self.mapping_dir]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.checks["denormd verify runs"] += 1
        print("denormd verify (%d mappings): exit %d" % (len(names), r.returncode))
        if r.returncode != 0:
            print(r.stdout[-6000:] + r.stderr[-2000:])
        return r.returncode

    # ---- the run ----
    def main(self):
        a = self.args
        self.logs = []
        print("soak: seed %d, %.2f minute(s), %s, faults %s%s" % (
            a.seed, a.minutes, "--ha (lease TTL %d ms)" % a.lease_ttl_ms if a.ha else "one instance",
            ",".join(a.fault_list) or "none",
            ", overload: %d busy processes beside it" % len(self.burners) if a.overload else ""))
        if a.partitions:
            print("  partitioned streams: %s" % ", ".join(a.partitions))
        for c in sorted(a.exclude_list):
            why = generator.KNOWN_HOLES.get(c)
            print("  excluded from the workload (--exclude %s): %s%s" % (c, generator.CLASSES[c],
                                                                        "; known hole: " + why if why else ""))
        for f, why in sorted(faults.KNOWN_HOLES.items()):
            if f not in a.fault_list:
                print("  fault left out (not in --faults): %s; known hole: %s" % (f, why))
        for c in sorted(a.tolerate_list):
            print("  tolerated by the oracle (--tolerate %s): %s" % (c, oracle.TOLERATE[c]))
        if "stepdown" in a.fault_list:
            print("  stepdown: change streams %s a step-down (%s seed)" % (
                "are killed by" if self.kills_streams else "survive", "odd" if self.kills_streams else "even"))
        for name, why in sorted(faults.PLANNED.items()):
            print("  fault type not available yet: %s (%s)" % (name, why))
        for _ in range(a.instances if a.ha else 1):
            self.start_instance()
        self.workload.seed()
        self.quiesce_and_check("seed")
        end = time.time() + a.minutes * 60
        kinds = [faults.FAULTS[f] for f in a.fault_list if a.ha or not faults.FAULTS[f].ha_only]
        step = 0
        while time.time() < end:
            step += 1
            fault = self.rng.choice(kinds)(self) if kinds and self.rng.random() < 0.8 else None
            label = fault.name if fault else "no fault"
            if fault:
                fault.begin()
                self.injected[fault.name] += 1
            self.workload.step(self.ops)
            if fault:
                fault.end()
            for d in self.daemons:
                if d.proc.poll() is not None:
                    self.note("%s exited %s during the step; restarted" % (d.name, d.proc.returncode))
                    self.logs.append(d.log_path)
                    self.restart(d)
            self.quiesce_and_check("step %d (%s)" % (step, label))
        rc = self.verify()
        self.report(rc)
        if a.keep:
            print("test server kept at %s (pid %d) for 10 minutes" % (self.emulator.uri, os.getpid()), flush=True)
            time.sleep(600)
        return 0 if not self.mismatches and rc == 0 and not self.workload.traces and not self.liveness_failures else 1

    def report(self, verify_rc):
        w = self.workload
        print("\nwrites by type: " + ", ".join("%s %d" % kv for kv in sorted(w.stats.items())))
        if w.errors:
            print("writes the server refused (not a finding): " + ", ".join("%s %d" % kv for kv in sorted(w.errors.items())))
        print("faults injected: " + (", ".join("%s %d" % kv for kv in sorted(self.injected.items())) or "none"))
        try:  # every client's commands the server failed (fault injection, step-downs, retries)
            cmds = self.client.admin.command("serverStatus")["metrics"]["commands"]
            failed = {k: v["failed"] for k, v in cmds.items() if isinstance(v, dict) and v.get("failed")}
            print("commands the test server failed (all clients): "
                  + (", ".join("%s %d" % kv for kv in sorted(failed.items())) or "none"))
        except pymongo.errors.PyMongoError as e:
            print("serverStatus failed: %s" % e)
        print("checks: " + ", ".join("%s %d" % kv for kv in sorted(self.checks.items())))
        print("aborted transactions that left a trace: %d%s" % (len(w.traces), (" (" + ", ".join(w.traces) + ")") if w.traces else ""))
        stuck = 0
        for path in self.logs + [d.log_path for d in self.daemons]:
            try:
                with open(path) as f:
                    stuck += f.read().count("times in a row; it is retried until it is written")
            except OSError:
                pass
        print("batches that failed 5 times in a row (logged and counted, then written): %d" % stuck)
        print("liveness failures (an instance not caught up %d s after a step): %d%s" % (
            LIVENESS_S, len(self.liveness_failures),
            "".join("\n  %s: %s, %.0f s" % f for f in self.liveness_failures)))
        print("mismatches: %d (distinct mapping/_id/field)" % len(self.mismatches))
        for (label, m) in self.mismatches.values():
            print("  %s: _id %r, %s: expected %s, got %s (first seen after %s)"
                  % (m.mapping, m.id, m.field, m.expected[:300], m.got[:300], label))
        print("denormd verify: exit %d" % verify_rc)
        if self.mismatches or verify_rc or self.liveness_failures:
            print("denormd logs: " + " ".join(self.logs + [d.log_path for d in self.daemons]))

    def close(self):
        for d in self.daemons:
            d.kill9()
        for b in self.burners:
            b.kill()
            b.wait()
        self.emulator.stop()


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m tests.soak", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--minutes", type=float, required=True)
    p.add_argument("--ha", action="store_true", help="run --ha instances (several, joining and leaving)")
    p.add_argument("--instances", type=int, default=2, help="--ha instances at the start (default 2)")
    p.add_argument("--partitions", action="append", default=[], metavar="NS=N",
                   help="denormd's --partitions for every instance (repeatable), e.g. soak.orders=4")
    p.add_argument("--faults", default=",".join(faults.FAULTS),
                   help="comma-separated fault types (default all): " + ", ".join(faults.FAULTS) + "; 'none' for none")
    p.add_argument("--exclude", default="", help="workload classes left out: " + ", ".join(generator.CLASSES))
    p.add_argument("--keep", action="store_true", help="after the report, keep the test server up 10 minutes (prints its URI)")
    p.add_argument("--tolerate", default="", help="known holes the oracle lets pass: " + ", ".join(oracle.TOLERATE))
    p.add_argument("--ops", type=int, default=40, help="writes per step (default 40)")
    p.add_argument("--overload", action="store_true",
                   help="keep twice as many busy processes as cores running beside the whole run")
    p.add_argument("--lease-ttl-ms", type=int, default=None,
                   help="--ha instances' lease TTL (default %d, 2000 with --overload)" % faults.LEASE_TTL_MS)
    a = p.parse_args(argv)
    if a.lease_ttl_ms is None:
        a.lease_ttl_ms = 2000 if a.overload else faults.LEASE_TTL_MS
    a.fault_list = [] if a.faults in ("", "none") else a.faults.split(",")
    for f in a.fault_list:
        if f in faults.PLANNED:
            p.error("fault %s is not available yet: %s" % (f, faults.PLANNED[f]))
        if f not in faults.FAULTS:
            p.error("unknown fault %s (known: %s)" % (f, ", ".join(faults.FAULTS)))
    a.exclude_list = [c for c in a.exclude.split(",") if c]
    for c in a.exclude_list:
        if c not in generator.CLASSES:
            p.error("unknown class %s (known: %s)" % (c, ", ".join(generator.CLASSES)))
    a.tolerate_list = [c for c in a.tolerate.split(",") if c]
    for c in a.tolerate_list:
        if c not in oracle.TOLERATE:
            p.error("unknown --tolerate %s (known: %s)" % (c, ", ".join(oracle.TOLERATE)))
    oracle.tolerated.update(a.tolerate_list)
    return a


def main(argv=None):
    run = Run(parse(sys.argv[1:] if argv is None else argv))
    try:
        return run.main()
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
