"""End-to-end benchmark: denormd against the embedded test server, next to hand-written baselines.

    python3 -m tests.bench.e2e_bench [--quick] [--json FILE] [--markdown FILE] [--skip-baseline]

(from the repository root: it imports the integration harness as the package tests.integration)

Starts mongo-emulator, seeds the sample shop, runs `denormd run` with the six sample mappings
and measures (see docs/performance.md for what each figure means and the latest results):
ceilings of the test server for the write patterns involved; sustained throughput of the copy
and the recent mappings; apply latency at fixed rates; CPU and RSS of the denormd process per
event (from /proc); one source change fanned out to many documents; coalescing of hot keys;
catch-up after an outage. Then the realistic catch-up (--only realistic_catch_up): a backlog of
the integration suites' random workload caught up by denormd, by tests/bench/thread_sync.py
(one watch thread per source collection, the baseline the targets are stated against) and by
tests/bench/naive_sync.py (one watch loop over the database), each on a fresh server with the
same seed. Last, the sustained throughput, latency and coalescing workloads against each script
in turn, again on a fresh server with the same seed (--skip-baseline leaves the scripts out).

--quick shrinks everything to seconds (CI runs it so the driver cannot rot); its numbers mean
nothing. Every measurement checks that the copies converged, so a wrong result fails the run.
With DENORMD_TEST_URI set, a real replica set is used instead (server CPU is then not shown).
"""
import argparse
import collections
import datetime
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import threading
import time

import pymongo
from pymongo import DeleteOne, InsertOne, UpdateMany, UpdateOne, monitoring

from tests.integration import seed
from tests.integration.harness import DENORMD, EMULATOR, REAL_URI, Denormd, Emulator, write_mappings
from tests.integration.shop import NewDocuments, Shop

HERE = os.path.dirname(os.path.abspath(__file__))

CLK_TCK = os.sysconf("SC_CLK_TCK")
FAR = datetime.datetime(2100, 1, 1)
COPY_MAPPINGS = ("orders-customer", "orders-items-product", "logmsgs-host")
# What --only selects: the measurements of one running denormd, and the realistic catch-up,
# which runs denormd and both scripts, each on a fresh server.
DENORMD_MEASUREMENTS = ("copy", "recent", "latency", "coalescing", "fanout", "catch_up")
REALISTIC = "realistic_catch_up"
# --ha: the catch-up with 1, 2 and 3 instances, and the failover time over kills.
HA = "ha"
HA_INSTANCES = (1, 2, 3)
# The baselines, the one the targets are stated against first: (script file, row label).
SCRIPTS = (("thread_sync.py", "threads"), ("naive_sync.py", "naive"))
# Where each script's sustained-throughput results go in --json, and the key of denormd's ratios
# against them: the naive loop keeps "baseline" and "ratios", the keys of the results from
# before the thread script was measured there too, which --render still reads.
BASELINE_KEYS = {"threads": "threads", "naive": "baseline"}
RATIO_KEYS = {"threads": "ratios_threads", "naive": "ratios"}
RECENT_MAPPINGS = ("products-recent-reviews", "hosts-recent-logs", "customers-recent-orders")


def say(text=""):
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Processes


class Proc:
    """CPU seconds and memory of a local process, from /proc."""

    def __init__(self, pid):
        self.pid = pid

    def cpu(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime
        except (OSError, ValueError):
            return float("nan")

    def alive(self):
        """Still running: a child that exited stays in /proc, as a zombie, until it is waited for."""
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False

    def status_kib(self, key):
        try:
            with open("/proc/%d/status" % self.pid) as f:
                for line in f:
                    if line.startswith(key + ":"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0


class PeakRss:
    """The highest RSS a process reached while the `with` block ran, sampled every 0.1 s (and its
    own high-water mark, which the kernel keeps, in case a peak fell between samples)."""

    def __init__(self, proc):
        self.proc = proc
        self.peak = 0
        self.stop = threading.Event()

    def __enter__(self):
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()

    def _sample(self):
        while not self.stop.wait(0.1):
            self.peak = max(self.peak, self.proc.status_kib("VmRSS"))

    def peak_kib(self):
        return max(self.peak, self.proc.status_kib("VmHWM"))


class NoProc:
    def cpu(self):
        return float("nan")

    def status_kib(self, key):
        return 0


class Script:
    """A hand-written synchronizer (tests/bench/naive_sync.py or thread_sync.py) as a child
    process; its progress lines are collected. `start`, a cluster time, is where its streams
    begin (it keeps no resume token); without it, now."""

    def __init__(self, uri, db, script="naive_sync.py", start=None):
        extra = ["%d.%d" % (start.time, start.inc)] if start is not None else []
        self.script = script
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, script), uri, db, *extra],
                                     stdout=subprocess.PIPE, text=True)
        self.events = 0
        self.writes = 0
        self.latencies = []  # (arrival time, ms)
        self.lock = threading.Lock()
        first = self.proc.stdout.readline()
        if '"ready"' not in first:
            raise RuntimeError("%s did not start: %r" % (script, first))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            d = json.loads(line)
            now = time.time()
            with self.lock:
                self.events, self.writes = d["events"], d["writes"]
                self.latencies.extend((now, ms) for ms in d["lat_ms"])

    def counters(self):
        time.sleep(0.6)  # one more progress line
        with self.lock:
            return self.events, self.writes

    def latencies_between(self, t0, t1):
        time.sleep(0.6)
        with self.lock:
            return [ms for t, ms in self.latencies if t0 <= t <= t1 + 0.6]

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(10)


# ---------------------------------------------------------------------------------------------
# The shop and its workloads


class BenchShop:
    """The sample shop (tests/integration/seed.py) plus the benchmark's own documents: a marker
    customer, product, order and host (id -1, "marker") whose copies show when a workload has
    been applied, and a host with `fanout_docs` log messages for the fan-out."""

    def __init__(self, client, dbname, size, rng):
        self.db = client[dbname]
        self.size = size
        self.rng = rng
        self.seq = 0
        self.marker_seq = 0
        self.delivered = {}  # {order id: the customer snapshot a delivered order keeps}

    def seed(self, fanout_docs):
        s, db, t0 = self.size, self.db, seed.T0
        self.delivered = seed.seed_shop(db, self.rng, s["customers"], s["products"], s["orders"], s["hosts"], 0, 0,
                                        indexes=True)
        db.customers.insert_one({"_id": -1, "name": "Customer -1", "email": "c-1@example.com",
                                 "address": {"city": "Oslo"}})
        db.products.insert_one({"_id": -1, "title": "Product -1", "sku": "SKU--1", "price": 1, "stock": 10})
        db.orders.insert_one({"_id": -1, "customerId": -1, "status": "NEW", "total": 1, "createdAt": t0,
                              "customer": {"name": "Customer -1"},
                              "items": [{"productId": -1, "qty": 1, "product": {"title": "Product -1"}}]})
        db.hosts.insert_many([{"_id": h, "name": h, "ipaddr": "10.0.0.0"} for h in ("marker", "fan")])
        db.logmsgs.insert_one(seed.logmsg("marker-log", {"_id": "marker", "name": "marker", "ipaddr": "10.0.0.0"},
                                          t0, "marker"))
        fan = {"_id": "fan", "name": "fan", "ipaddr": "10.0.0.0"}
        seed.insert_in_batches(db.logmsgs, (seed.logmsg("fan-%d" % i, fan, t0, "GET /") for i in range(fanout_docs)),
                               10000)

    def customer_id(self):
        return 1 + self.rng.randrange(self.size["customers"])

    def product_id(self):
        return 1 + self.rng.randrange(self.size["products"])

    # Workloads: each returns one (collection, write) for the next source event.
    def copy_event(self):
        self.seq += 1
        if self.rng.random() < 0.9:
            c = self.customer_id()
            return "customers", UpdateOne({"_id": c}, {"$set": {"name": "Customer %d v%d" % (c, self.seq),
                                                                "email": "c%d.%d@example.com" % (c, self.seq)}})
        p = self.product_id()
        return "products", UpdateOne({"_id": p}, {"$set": {"title": "Product %d v%d" % (p, self.seq)}})

    def recent_event(self):
        self.seq += 1
        when = datetime.datetime(2030, 1, 1) + datetime.timedelta(milliseconds=self.seq)
        if self.rng.random() < 0.5:
            return "reviews", InsertOne(seed.review("r%d" % self.seq, self.product_id(), 4, "Review %d" % self.seq, when))
        h = seed.host_id(1 + self.rng.randrange(self.size["hosts"]))
        return "logmsgs", InsertOne(seed.logmsg("l%d" % self.seq, {"_id": h, "name": h, "ipaddr": "10.0.0.1"}, when,
                                                "GET /%d" % self.seq))

    def hot_event(self, keys=100):
        self.seq += 1
        c = 1 + self.rng.randrange(keys)
        return "customers", UpdateOne({"_id": c}, {"$set": {"name": "Hot %d v%d" % (c, self.seq)}})

    def mixed_event(self):
        """A day's mix: most changes touch no copied field, some rename, some add children."""
        r = self.rng.random()
        if r < 0.6:
            self.seq += 1
            if r < 0.4:
                return "customers", UpdateOne({"_id": self.customer_id()}, {"$set": {"lastSeenAt": self.seq}})
            return "products", UpdateOne({"_id": self.product_id()},
                                         {"$inc": {"stock": -1}})
        if r < 0.9:
            return self.copy_event()
        return self.recent_event()

    # Markers: one write per source after a workload; when every marker's effect is visible,
    # everything written before it on that source has been applied (each source is applied in
    # order, by denormd and by both scripts alike).
    def write_markers(self, sources):
        self.marker_seq += 1
        k = "m%d" % self.marker_seq
        when = FAR + datetime.timedelta(seconds=self.marker_seq)
        checks = []
        if "customers" in sources:
            self.db.customers.update_one({"_id": -1}, {"$set": {"name": k}})
            checks.append(lambda: (self.db.orders.find_one({"_id": -1}) or {}).get("customer", {}).get("name") == k)
        if "products" in sources:
            self.db.products.update_one({"_id": -1}, {"$set": {"title": k}})
            checks.append(lambda: (self.db.orders.find_one({"_id": -1}) or {"items": [{}]})["items"][0]
                          .get("product", {}).get("title") == k)
        if "reviews" in sources:
            self.db.reviews.insert_one({"_id": k, "productId": -1, "stars": 5, "text": k, "createdAt": when})
            checks.append(lambda: ((self.db.products.find_one({"_id": -1}) or {}).get("recentReviews") or [{}])[0]
                          .get("reviewId") == k)
        if "logmsgs" in sources:
            self.db.logmsgs.insert_one({"_id": k, "hostId": "marker", "time": when, "message": k,
                                        "host": seed.host_snapshot({"name": "marker", "ipaddr": "10.0.0.0"})})
            checks.append(lambda: ((self.db.hosts.find_one({"_id": "marker"}) or {}).get("recentLogs") or [{}])[0]
                          .get("logId") == k)
        if "orders" in sources:
            self.db.orders.insert_one({"_id": k, "customerId": -1, "status": "NEW", "total": 1, "createdAt": when,
                                       "customer": {}, "items": []})
            checks.append(lambda: ((self.db.customers.find_one({"_id": -1}) or {}).get("recentOrders") or [{}])[0]
                          .get("orderId") == k)
        if "hosts" in sources:
            self.db.hosts.update_one({"_id": "marker"}, {"$set": {"name": k}})
            checks.append(lambda: (self.db.logmsgs.find_one({"_id": "marker-log"}) or {}).get("host", {})
                          .get("name") == k)
        return checks


class ShopDay(NewDocuments):
    """The integration suites' random workload (tests/integration/shop.py, Shop.random_change),
    same mix and same proportions, as (collection, write) pairs for Generator.drive: the
    documents it needs (a customer for a new order's snapshot, the newest reviews to hide or
    delete, ...) are read once and then followed in memory, where Shop.random_change reads
    them per change (one of those reads, the newest open orders, scans every order: under 100
    changes per second at the benchmark's size). Its own reviews and log lines are the ones it
    hides, moves and deletes."""

    def __init__(self, db, rng):
        super().__init__()
        self.rng = rng
        self.customers = {c["_id"]: c for c in db.customers.find()}
        self.products = {p["_id"]: p for p in db.products.find()}
        self.hosts = sorted(h["_id"] for h in db.hosts.find({}, {"_id": 1}) if h["_id"].startswith("web-"))
        self.host_docs = {h["_id"]: h for h in db.hosts.find()}
        self.open = [o["_id"] for o in db.orders.find({"status": {"$in": seed.OPEN}}, {"_id": 1}).sort("createdAt", 1)]
        self.reviews = []  # the workload's reviews, newest last: [id, productId, hidden]
        self.logs = []  # the workload's log lines, newest last

    def event(self):
        r, k = self.rng, self.rng.random()
        c = self.customers[r.randint(1, len(self.customers) - 1)] if k < 0.25 else None  # not the marker
        if k < 0.12:
            c["name"] = "Customer %d" % r.randint(1, 10**6)
            return "customers", UpdateOne({"_id": c["_id"]}, {"$set": {"name": c["name"]}})
        if k < 0.17:
            c.setdefault("address", {})["city"] = r.choice(seed.CITIES)
            return "customers", UpdateOne({"_id": c["_id"]}, {"$set": {"address.city": c["address"]["city"]}})
        if k < 0.20:
            c.pop("email", None)
            return "customers", UpdateOne({"_id": c["_id"]}, {"$unset": {"email": ""}})
        if k < 0.25:
            return "customers", UpdateOne({"_id": c["_id"]}, {"$set": {"lastLogin": self._tick()}})
        if k < 0.33:
            p = self.products[r.randint(1, len(self.products) - 1)]
            p["title"] = "Product %d" % r.randint(1, 10**6)
            return "products", UpdateOne({"_id": p["_id"]}, {"$set": {"title": p["title"]}})
        if k < 0.36:
            p = self.products[r.randint(1, len(self.products) - 1)]
            p["price"] += 1
            return "products", UpdateOne({"_id": p["_id"]}, {"$inc": {"price": 1}})
        if k < 0.39:
            h = self.host_docs[r.choice(self.hosts)]
            h["ipaddr"] = "10.1.%d.%d" % (r.randint(0, 255), r.randint(1, 254))
            return "hosts", UpdateOne({"_id": h["_id"]}, {"$set": {"ipaddr": h["ipaddr"]}})
        if k < 0.52 or (k < 0.55 and not self.logs):
            log = seed.logmsg(self._id(), self.host_docs[r.choice(self.hosts)], self._tick(),
                              "event %d" % r.randint(1, 10**6))
            self.logs.append(log["_id"])
            return "logmsgs", InsertOne(log)
        if k < 0.55:
            return "logmsgs", DeleteOne({"_id": self.logs.pop(-1 - r.randint(0, min(20, len(self.logs) - 1)))})
        if k < 0.68 or (k < 0.77 and not self.reviews):
            rev = seed.review(self._id(), r.randint(1, len(self.products) - 1), r.randint(1, 5),
                              "review text %d" % r.randint(1, 10**6), self._tick(), hidden=r.random() < 0.1)
            self.reviews.append([rev["_id"], rev["productId"], rev.get("hidden", False)])
            return "reviews", InsertOne(rev)
        if k < 0.76:
            i = -1 - r.randint(0, min(30, len(self.reviews) - 1))  # one of the newest
            rev = self.reviews[i]
            if k < 0.71:
                return "reviews", UpdateOne({"_id": rev[0]}, {"$set": {"stars": r.randint(1, 5)}})
            if k < 0.73:
                rev[2] = not rev[2]
                return "reviews", UpdateOne({"_id": rev[0]}, {"$set": {"hidden": True}} if rev[2] else
                                            {"$unset": {"hidden": ""}})
            if k < 0.75:
                del self.reviews[i]
                return "reviews", DeleteOne({"_id": rev[0]})
            rev[1] = r.randint(1, len(self.products) - 1)
            return "reviews", UpdateOne({"_id": rev[0]}, {"$set": {"productId": rev[1]}})
        if k < 0.77:
            rev = self.reviews.pop(r.randint(0, min(50, len(self.reviews) - 1)))  # one of the oldest
            self.reviews.append(rev)  # now the newest
            return "reviews", UpdateOne({"_id": rev[0]}, {"$set": {"createdAt": self._tick()}})
        if k < 0.88 or not self.open:
            c = self.customers[r.randint(1, len(self.customers) - 1)]
            p = self.products[r.randint(1, len(self.products) - 1)]
            o = {"_id": self._id(), "customerId": c["_id"], "status": "NEW", "total": r.randint(5, 500),
                 "createdAt": self._tick(), "customer": seed.customer_snapshot(c), "items": [seed.order_item(p, 1)]}
            self.open.append(o["_id"])
            return "orders", InsertOne(o)
        if k < 0.95:
            o = self.open[r.randint(0, min(30, len(self.open) - 1))]  # one of the oldest open
            return "orders", UpdateOne({"_id": o}, {"$set": {"status": r.choice(seed.OPEN)}})
        return "orders", DeleteOne({"_id": self.open.pop(-1 - r.randint(0, min(10, len(self.open) - 1)))})


def wait_markers(checks, timeout, alive=None):
    deadline = time.time() + timeout
    pending = list(checks)
    while pending and time.time() < deadline:
        if alive is not None and not alive():
            raise AssertionError("the synchronizer exited before it applied every marker")
        pending = [c for c in pending if not c()]
        if pending:
            time.sleep(0.02)
    return not pending


SOURCES = {"copy": ("customers", "products"), "recent": ("reviews", "logmsgs"), "hot": ("customers",),
           "mixed": ("customers", "products", "reviews")}
# Every namespace denormd watches: once all these markers are applied, so are the events
# denormd's own writes caused before them ("echoes").
ALL_SOURCES = ("customers", "products", "reviews", "logmsgs", "orders", "hosts")


class Generator:
    """Writes source events at a fixed rate (or as fast as it can), in bulks of at most 1000."""

    def __init__(self, client, dbname):
        self.db = client[dbname]
        self.commands = 0
        self.proc = Proc(os.getpid())

    def drive(self, make_event, rate, seconds=None, count=None):
        """Returns (events written, seconds taken)."""
        t0 = time.time()
        sent = 0
        while True:
            now = time.time()
            elapsed = now - t0
            if seconds is not None and elapsed >= seconds:
                break
            if count is not None and sent >= count:
                break
            due = int(rate * elapsed) - sent if rate else 1000
            if count is not None:
                due = min(due, count - sent)
            if seconds is not None and rate:
                due = min(due, int(rate * seconds) - sent)
            if due <= 0:
                time.sleep(0.002)
                continue
            per_coll = {}
            for _ in range(min(due, 1000)):
                coll, op = make_event()
                per_coll.setdefault(coll, []).append(op)
            for coll, ops in per_coll.items():
                self.db[coll].bulk_write(ops, ordered=True)
                self.commands += 1
                sent += len(ops)
        return sent, time.time() - t0


# ---------------------------------------------------------------------------------------------
# Metrics


def histogram(metrics, name, mappings):
    """{le: cumulative count} summed over `mappings`."""
    out = {}
    for (n, labels), v in metrics.items():
        if n != name + "_bucket":
            continue
        ls = dict(labels)
        if ls.get("mapping") in mappings:
            le = float("inf") if ls["le"] == "+Inf" else float(ls["le"])
            out[le] = out.get(le, 0) + v
    return out


def quantile(before, after, q):
    """Like PromQL's histogram_quantile over the difference of two scrapes; None if empty."""
    bounds = sorted(after)
    cum = [(b, after[b] - before.get(b, 0)) for b in bounds]
    total = cum[-1][1] if cum else 0
    if total <= 0:
        return None
    rank = q * total
    prev_b, prev_c = 0.0, 0.0
    for b, c in cum:
        if c >= rank:
            if b == float("inf"):
                return prev_b
            return prev_b + (b - prev_b) * ((rank - prev_c) / max(c - prev_c, 1e-9))
        prev_b, prev_c = b, c
    return prev_b


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def metric_total(metrics, name, **labels):
    want = set(labels.items())
    return sum(v for (n, ls), v in metrics.items() if n == name and want <= set(ls))


class OwnCommands(monitoring.CommandListener):
    """The commands the benchmark's own client sends, by name, so that the server's counts can
    be told apart: what is left is the synchronizer's."""

    def __init__(self):
        self.counts = collections.Counter()

    def started(self, event):
        self.counts[event.command_name] += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


# Commands a count of the synchronizer's work leaves out: the drivers' handshakes and pings.
NOT_WORK = {"hello", "isMaster", "ismaster", "ping", "serverStatus", "buildInfo", "endSessions"}


def server_counters(client, own):
    """(commands by name, documents written) as the server counts them (serverStatus), and the
    benchmark's own commands so far; None on a server that does not say."""
    try:
        status = client.admin.command("serverStatus")
    except pymongo.errors.PyMongoError:
        return None
    commands = {name: c.get("total", 0) for name, c in status.get("metrics", {}).get("commands", {}).items()
                if isinstance(c, dict)}
    documents = status.get("metrics", {}).get("document", {})
    written = sum(documents.get(k, 0) for k in ("inserted", "updated", "deleted"))
    return commands, written, dict(own.counts)


def work_per_event(before, after, events, own_documents):
    """The synchronizer's server commands (total and by name) and documents written per source
    event between two server_counters() readings, the benchmark's own commands and the
    `own_documents` it wrote meanwhile taken out."""
    if before is None or after is None or events == 0:
        return {}
    by_name = {}
    for name, total in after[0].items():
        if name in NOT_WORK:
            continue
        n = total - before[0].get(name, 0) - (after[2].get(name, 0) - before[2].get(name, 0))
        if n > 0:
            by_name[name] = round(n / events, 3)
    return dict(server_commands_per_event=round(sum(by_name.values()), 3), server_commands=by_name,
                documents_written_per_event=round(max(0, after[1] - before[1] - own_documents) / events, 3))


def update_commands(client):
    return client.admin.command("serverStatus").get("metrics", {}).get("commands", {}).get("update", {}).get("total")


# ---------------------------------------------------------------------------------------------
# The benchmark


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.results = {"quick": self.quick}
        if self.quick:
            # Small enough that the smoke test costs CI seconds, large enough that every
            # measurement still runs its whole path (batches of 1,000 events and more).
            self.size = dict(customers=600, products=100, orders=2000, hosts=20)
            self.rates = [500]
            self.step_seconds, self.latency_seconds, self.latency_rounds = 1.0, 1.0, 1
            self.fanout, self.backlog, self.hot_updates = 2000, 2000, 500
            self.realistic_backlog = 500
        else:
            self.size = dict(customers=20000, products=5000, orders=60000, hosts=20)
            self.rates = [100, 250, 500, 1000, 2000, 3000, 5000, 7500, 10000, 15000, 20000, 30000]
            self.step_seconds, self.latency_seconds, self.latency_rounds = 8, 10, 3
            self.fanout, self.backlog, self.hot_updates = 1000000, 500000, 10000
            self.realistic_backlog = 100000
        if getattr(args, "realistic_events", None):
            self.realistic_backlog = args.realistic_events
        if getattr(args, "latency_rounds", None):
            self.latency_rounds = args.latency_rounds
        if getattr(args, "backlog", None):
            self.backlog = args.backlog
        if getattr(args, "fanout", None):
            self.fanout = args.fanout

    # -- set-up
    def start_server(self):
        if REAL_URI:
            self.server, self.server_proc = None, NoProc()
            self.uri = REAL_URI
            self.dbname = "denormd_bench_%d" % os.getpid()
        else:
            # Room for the whole backlog and the writes it causes: losing history would turn
            # the catch-up figure into a re-sync figure.
            # A transaction an --ha instance was killed in stays open (its documents conflict)
            # until the server's transactionLifetimeLimitSeconds: 60 as on MongoDB, shorter in
            # --quick so that the smoke test stays short.
            self.server = Emulator("--oplog-max-events", str(max(1000000, 8 * self.backlog)),
                                   "--transaction-lifetime-limit-seconds", "5" if self.args.quick else "60")
            self.server_proc = Proc(self.server.proc.pid)
            self.uri = self.server.uri
            self.dbname = "shop"
        self.own = OwnCommands()
        self.client = pymongo.MongoClient(self.uri, w="majority", event_listeners=[self.own])
        self.shop = BenchShop(self.client, self.dbname, self.size, random.Random(7))
        self.gen = Generator(self.client, self.dbname)

    def stop_server(self):
        if REAL_URI:
            self.client.drop_database(self.dbname)
        self.client.close()
        if self.server:
            self.server.stop()

    def cpu(self):
        return {"denormd": self.sync_proc.cpu(), "server": self.server_proc.cpu(), "driver": self.gen.proc.cpu()}

    # -- measurements shared by denormd and the baseline
    def step_test(self, label, make_event, sources):
        """Raise the rate until the synchronizer falls behind; the highest rate kept up wins."""
        steps = []
        for rate in self.rates:
            self.settle()
            c0, t0 = self.cpu(), time.time()
            n, gen_s = self.gen.drive(make_event, rate, seconds=self.step_seconds)
            t_gen = time.time()
            ok = wait_markers(self.shop.write_markers(sources), self.step_seconds * 3 + 10, self.sync_proc.alive)
            t_done, c1 = time.time(), self.cpu()
            if not ok:
                raise AssertionError("%s: copies did not converge at %d events/s" % (label, rate))
            achieved = n / gen_s
            behind = t_done - t_gen
            kept_up = behind <= max(1.0, 0.1 * self.step_seconds)
            step = dict(rate=rate, achieved=round(achieved), applied_per_s=round(n / (t_done - t0)),
                        behind_s=round(behind, 2), kept_up=kept_up,
                        cpu_s={k: round(c1[k] - c0[k], 2) for k in c0})
            steps.append(step)
            say("  %s %6d/s: wrote %6d/s, applied %6d/s, %.2f s behind at the end, cpu %s" % (
                label, rate, step["achieved"], step["applied_per_s"], behind, step["cpu_s"]))
            if not kept_up or achieved < 0.9 * rate:
                break
        return summarize_steps(steps)

    def fixed_rate(self, make_event, rate, sources):
        c0, t0 = self.cpu(), time.time()
        n, gen_s = self.gen.drive(make_event, rate, seconds=self.latency_seconds)
        t1 = time.time()
        if not wait_markers(self.shop.write_markers(sources), 60, self.sync_proc.alive):
            raise AssertionError("copies did not converge at %d events/s" % rate)
        c1 = self.cpu()
        return n, gen_s, t0, t1, {k: c1[k] - c0[k] for k in c0}

    # -- server ceilings, before anything watches
    def ceilings(self):
        db, s, rng = self.client[self.dbname], self.size, random.Random(1)
        secs = 0.5 if self.quick else 3
        out = {}

        def rate_of(coll, make):
            n, t0 = 0, time.time()
            while time.time() - t0 < secs:
                db[coll].bulk_write([make(n + i) for i in range(1000)])
                n += 1000
            return round(n / (time.time() - t0))

        out["source_updates"] = rate_of("customers", lambda i: UpdateOne(
            {"_id": 1 + rng.randrange(s["customers"])}, {"$set": {"ceiling": i}}))
        out["copy_update_many"] = rate_of("orders", lambda i: UpdateMany(
            dict({"customerId": 1 + rng.randrange(s["customers"])}, status={"$nin": ["DELIVERED", "CANCELLED"]}),
            {"$set": {"ceiling": i}}))
        out["copy_in_array_update_many"] = rate_of("orders", lambda i: (lambda p: UpdateMany(
            {"items.productId": p}, {"$set": {"items.$[e].ceiling": i}}, array_filters=[{"e.productId": p}]))(
            1 + rng.randrange(s["products"])))
        out["recent_push"] = rate_of("products", lambda i: UpdateOne(
            {"_id": 1 + rng.randrange(s["products"])},
            {"$push": {"ceilingList": {"$each": [{"i": i}], "$sort": {"i": -1}, "$slice": 10}}}))
        # Change-stream read-back of what the lines above wrote.
        t0, n = time.time(), 0
        with db.watch(start_at_operation_time=self.start_time, batch_size=1000) as stream:
            while time.time() - t0 < secs * 2:
                if stream.try_next() is None:
                    break
                n += 1
        out["change_stream_read"] = round(n / (time.time() - t0))
        db.customers.update_many({}, {"$unset": {"ceiling": 1}})
        db.orders.update_many({}, {"$unset": {"ceiling": 1, "items.$[].ceiling": 1}})
        db.products.update_many({}, {"$unset": {"ceilingList": 1}})
        return out

    # -- denormd
    def run_denormd(self):
        say("denormd: seeding the shop")
        self.start_server()
        self.shop.seed(self.fanout if not self.args.only or "fanout" in self.args.only else 0)
        self.start_time = self.client.admin.command("ping")["operationTime"]
        say("denormd: server ceilings")
        if not REAL_URI:
            self.results["server_ceilings"] = self.ceilings()
            say("  %s" % self.results["server_ceilings"])
        mappings = write_mappings(self.dbname)
        meta = self.dbname + "_meta"
        self.denormd = Denormd(self.uri, meta, mappings, *self.denormd_args(), lifecycle=False)
        self.sync_proc = Proc(self.denormd.proc.pid)
        try:
            self.wait_ready()
            r = self.results.setdefault("denormd", {})
            for name, measure in (("copy", lambda: self.step_test("copy", self.shop.copy_event, SOURCES["copy"])),
                                  ("recent", lambda: self.step_test("recent", self.shop.recent_event,
                                                                    SOURCES["recent"])),
                                  ("latency", self.denormd_latency), ("coalescing", self.denormd_coalescing),
                                  ("fanout", self.denormd_fanout),
                                  ("catch_up", lambda: self.denormd_catch_up(mappings, meta)),
                                  (HA, lambda: self.denormd_ha(mappings, meta))):
                if not self.args.only or name in self.args.only.split(","):
                    r[name] = measure()
        finally:
            code = self.denormd.stop()
            if code != 0:
                say(self.denormd.log()[-4000:])
            self.stop_server()
        if code != 0:
            raise AssertionError("denormd exited with %s" % code)

    def denormd_args(self):
        return ["--log-level", "info"] + [a for arg in self.args.denormd_arg or [] for a in arg.split()]

    def wait_ready(self):
        deadline = time.time() + 30
        while self.denormd.get("/readyz")[0] != 200:
            if time.time() > deadline:
                raise AssertionError("denormd not ready:\n" + self.denormd.log()[-3000:])
            time.sleep(0.05)

    def settle(self, timeout=600):
        """Until everything written so far, echoes of the synchronizer's own writes included,
        has been applied. A synchronizer that died fails at once, not after `timeout`."""
        if not wait_markers(self.shop.write_markers(ALL_SOURCES), timeout, self.sync_proc.alive):
            raise AssertionError("the synchronizer did not settle within %d s" % timeout)

    def denormd_latency(self):
        """Each fixed rate in several rounds, interleaved; the row holds the round with the
        median p99 and the spread of p99 over all rounds (near saturation on 2 cores, one
        stall of the driver, the server or denormd moves a p99 over 10 s a lot)."""
        rounds = {}
        for _ in range(self.latency_rounds):
            for label, make, mappings in (("copy", self.shop.copy_event, COPY_MAPPINGS),
                                          ("recent", self.shop.recent_event, RECENT_MAPPINGS)):
                for rate in (1000, 5000):
                    self.settle()
                    before, work0 = self.denormd.metrics(), server_counters(self.client, self.own)
                    n, gen_s, _, _, cpu = self.fixed_rate(make, rate, SOURCES[label])
                    after, work1 = self.denormd.metrics(), server_counters(self.client, self.own)
                    h0 = histogram(before, "denormd_apply_latency_seconds", mappings)
                    h1 = histogram(after, "denormd_apply_latency_seconds", mappings)
                    events_read = (metric_total(after, "denormd_events_total") -
                                   metric_total(before, "denormd_events_total"))
                    row = dict(rate=rate, achieved=round(n / gen_s), events=n, events_read=int(events_read),
                               p50_ms=ms(quantile(h0, h1, 0.5)), p99_ms=ms(quantile(h0, h1, 0.99)),
                               writes=int(metric_total(after, "denormd_writes_total") -
                                          metric_total(before, "denormd_writes_total")),
                               cpu_us_per_event={k: round(v / n * 1e6, 1) for k, v in cpu.items()},
                               denormd_cpu_us_per_event_read=round(cpu["denormd"] / max(events_read, 1) * 1e6, 1),
                               **work_per_event(work0, work1, n, n))
                    rounds.setdefault("%s_%d" % (label, rate), []).append(row)
                    say("  latency %s %d/s: %s" % (label, rate, row))
        out = {}
        for key, rows in rounds.items():
            rows.sort(key=lambda r: r["p99_ms"] if r["p99_ms"] is not None else float("inf"))
            median = dict(rows[len(rows) // 2])
            median["rounds"] = len(rows)
            median["p99_ms_all"] = [r["p99_ms"] for r in rows]
            out[key] = median
        return out

    def denormd_coalescing(self):
        self.settle()
        before, cmds0, gen0 = self.denormd.metrics(), update_commands(self.client), self.gen.commands
        n, gen_s = self.gen.drive(self.shop.hot_event, self.hot_updates, count=self.hot_updates)
        if not wait_markers(self.shop.write_markers(SOURCES["hot"]), 60):
            raise AssertionError("coalescing: copies did not converge")
        self.settle()
        after, cmds1 = self.denormd.metrics(), update_commands(self.client)
        own = self.gen.commands - gen0 + 1  # the marker
        row = dict(updates=n, seconds=round(gen_s, 2), keys=100,
                   write_ops=int(metric_total(after, "denormd_writes_total", mapping="orders-customer") -
                                 metric_total(before, "denormd_writes_total", mapping="orders-customer")),
                   update_commands=None if cmds0 is None else cmds1 - cmds0 - own)
        say("  coalescing: %s" % row)
        return row

    def denormd_fanout(self):
        self.settle()
        db = self.client[self.dbname]
        before = self.denormd.metrics()
        t0 = time.time()
        db.hosts.update_one({"_id": "fan"}, {"$set": {"ipaddr": "10.9.9.9"}})
        deadline = t0 + 600
        while db.logmsgs.find_one({"hostId": "fan", "host.ipaddr": {"$ne": "10.9.9.9"}}, {"_id": 1}):
            if time.time() > deadline:
                raise AssertionError("fan-out did not reach every log message")
            time.sleep(0.1)
        t_done = time.time()
        # The write is counted once acknowledged, a moment after the documents show it.
        written = lambda m: metric_total(m, "denormd_writes_total", mapping="logmsgs-host")  # noqa: E731
        while written(self.denormd.metrics()) == written(before) and time.time() < t_done + 10:
            time.sleep(0.01)
        write_ops = int(written(self.denormd.metrics()) - written(before))
        if not wait_markers(self.shop.write_markers(ALL_SOURCES), 1800):
            raise AssertionError("fan-out: denormd did not get through the echo events")
        t_echo = time.time()
        after = self.denormd.metrics()
        row = dict(documents=self.fanout, seconds=round(t_done - t0, 2), write_ops=write_ops,
                   echo_events=int(metric_total(after, "denormd_events_total") -
                                   metric_total(before, "denormd_events_total")),
                   echo_seconds=round(t_echo - t_done, 2))
        say("  fan-out: %s" % row)
        return row

    def denormd_catch_up(self, mappings, meta):
        self.settle()
        self.results["denormd"]["rss_kib_peak_streaming"] = self.sync_proc.status_kib("VmHWM")
        if self.denormd.stop() != 0:
            raise AssertionError("denormd did not stop cleanly:\n" + self.denormd.log()[-3000:])
        say("  catch-up: writing %d events while denormd is stopped" % self.backlog)
        n, gen_s = self.gen.drive(self.shop.mixed_event, None, count=self.backlog)
        checks = self.shop.write_markers(ALL_SOURCES)
        t0 = time.time()
        work0 = server_counters(self.client, self.own)
        self.denormd = Denormd(self.uri, meta, mappings, *self.denormd_args(), lifecycle=False)
        self.sync_proc = Proc(self.denormd.proc.pid)
        c0, s0 = self.sync_proc.cpu(), self.server_proc.cpu()
        with PeakRss(self.sync_proc) as rss:
            ok = wait_markers(checks, 1800)
            t1 = time.time()
        work1 = server_counters(self.client, self.own)
        if not ok:
            raise AssertionError("catch-up did not finish:\n" + self.denormd.log()[-3000:])
        m = self.denormd.metrics()
        row = dict(backlog=n, written_per_s=round(n / gen_s), seconds=round(t1 - t0, 2),
                   events_per_s=round(n / (t1 - t0)), events_read=int(metric_total(m, "denormd_events_total")),
                   cpu_us_per_event=round((self.sync_proc.cpu() - c0) / n * 1e6, 1),
                   server_cpu_us_per_event=round((self.server_proc.cpu() - s0) / n * 1e6, 1),
                   rss_kib_peak=rss.peak_kib(),
                   history_lost=int(metric_total(m, "denormd_history_lost_total")),
                   **work_per_event(work0, work1, n, 0))
        if row["history_lost"]:
            raise AssertionError("the backlog fell off the server's history; catch-up measured a re-sync")
        say("  catch-up: %s" % row)
        return row

    def ha_instances(self, mappings, meta, names, ttl_ms):
        return {n: Denormd(self.uri, meta, mappings, *self.denormd_args(), "--ha", "--instance-id", n,
                           "--lease-ttl-ms", str(ttl_ms), lifecycle=False) for n in names}

    @staticmethod
    def lease_owners(instances):
        """{unit: [instances that say they hold it]}, from each live instance's metrics."""
        out = {}
        for name, d in instances.items():
            if d.proc.poll() is not None:
                continue
            try:
                m = d.metrics()
            except OSError:
                continue
            for (metric, labels), v in m.items():
                if metric == "denormd_lease_held" and v == 1:
                    out.setdefault(dict(labels)["unit"], []).append(name)
        return out

    def wait_spread(self, instances, units, timeout=120, settled=True):
        """Until every unit is held once (and, when `settled`, the live instances' counts are
        within one of each other); returns the owners."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            o = self.lease_owners(instances)
            if set(o) == units and all(len(v) == 1 for v in o.values()):
                counts = [sum(1 for v in o.values() if n in v) for n in instances]
                if not settled or max(counts) - min(counts) <= 1:
                    return o
            time.sleep(0.05)
        raise AssertionError("the units were not held once each within %d s" % timeout)

    def denormd_ha(self, mappings, meta):
        """--ha. The copy catch-up (a fifth of its backlog) with 1, 2 and 3 instances started
        together, from the moment they start (their lease rounds included) until every marker
        is applied. Then the failover time over --ha-kills kills: three instances with
        --ha-ttl-ms under a steady 500 events/s, the one holding the most units killed (-9),
        timed until every unit is held again by a survivor; the killed one is restarted under
        the same name before the next kill."""
        out = dict(backlog=max(1000, self.backlog // 5), ttl_ms=self.args.ha_ttl_ms, catch_up=[], failovers_s=[])
        self.settle()
        if self.denormd.stop() != 0:
            raise AssertionError("denormd did not stop cleanly:\n" + self.denormd.log()[-3000:])
        units = None
        for n in HA_INSTANCES:
            count, _ = self.gen.drive(self.shop.mixed_event, None, count=out["backlog"])
            checks = self.shop.write_markers(ALL_SOURCES)
            t0 = time.time()
            group = self.ha_instances(mappings, meta, ["i%d" % k for k in range(n)], self.args.ha_ttl_ms)
            try:
                if not wait_markers(checks, 1800):
                    raise AssertionError("the --ha catch-up did not finish")
                t1 = time.time()
                units = units or {dict(labels)["unit"] for (m, labels) in group["i0"].metrics()
                                  if m == "denormd_lease_held"}
                row = dict(instances=n, seconds=round(t1 - t0, 2), events_per_s=round(count / (t1 - t0)))
                say("  ha catch-up: %s" % row)
                out["catch_up"].append(row)
            finally:
                for d in group.values():
                    d.stop(60)
        names = ["a", "b", "c"]
        group = self.ha_instances(mappings, meta, names, self.args.ha_ttl_ms)
        stop_load = threading.Event()

        def steady_load():
            while not stop_load.is_set():
                self.gen.drive(self.shop.mixed_event, 500, seconds=1)

        load = threading.Thread(target=steady_load)
        load.start()
        try:
            owners = self.wait_spread(group, units)
            for _ in range(self.args.ha_kills):
                held = {n: sum(1 for v in owners.values() if n in v) for n in names}
                victim = max(held, key=held.get)
                group[victim].kill9()
                killed = time.time()
                rest = {n: d for n, d in group.items() if n != victim}
                self.wait_spread(rest, units, timeout=self.args.ha_ttl_ms / 1000 + 60, settled=False)
                took = round(time.time() - killed, 2)
                say("  ha failover: %s held %d units; all held again after %.2f s" % (victim, held[victim], took))
                out["failovers_s"].append(took)
                group[victim] = self.ha_instances(mappings, meta, [victim], self.args.ha_ttl_ms)[victim]
                owners = self.wait_spread(group, units)
        finally:
            stop_load.set()
            load.join()
        if not wait_markers(self.shop.write_markers(ALL_SOURCES), 600):
            raise AssertionError("the --ha instances did not apply everything after the kills")
        for d in group.values():
            if d.stop(60) not in (0, None):
                raise AssertionError("an --ha instance did not stop cleanly")
        f = out["failovers_s"]
        out["failover_median_s"] = round(statistics.median(f), 2) if f else None
        out["failover_max_s"] = max(f) if f else None
        # The daemon the other measurements expect, back as it was.
        self.denormd = Denormd(self.uri, meta, mappings, *self.denormd_args(), lifecycle=False)
        self.sync_proc = Proc(self.denormd.proc.pid)
        self.wait_ready()
        return out

    # -- the realistic catch-up: denormd and both scripts, each on a fresh server
    def realistic_catch_up(self):
        out = {}
        for who in ["denormd"] + ([] if self.args.skip_baseline else [label for _, label in SCRIPTS]):
            out[who] = self.realistic_run(who)
        d = out["denormd"]
        for _, label in SCRIPTS:
            if label in out:
                b = out[label]
                out["ratio_" + label] = dict(events_per_s=round(d["events_per_s"] / b["events_per_s"], 1),
                                             cpu_per_event=round(b["cpu_us_per_event"] / d["cpu_us_per_event"], 1))
        say("  realistic catch-up ratios: %s" % {k: v for k, v in out.items() if k.startswith("ratio_")})
        return out

    def start_sync(self, who, meta, mappings, start):
        """denormd (it resumes from its checkpoints) or a script (from `start`)."""
        if who == "denormd":
            self.denormd = Denormd(self.uri, meta, mappings, *self.denormd_args(), lifecycle=False)
            self.sync_proc = Proc(self.denormd.proc.pid)
            self.wait_ready()
            return self.denormd
        script = Script(self.uri, self.dbname, dict((label, f) for f, label in SCRIPTS)[who], start)
        self.sync_proc = Proc(script.proc.pid)
        return script

    def realistic_run(self, who):
        """Seed the shop, let the synchronizer reach the present, stop it, write the backlog of
        the integration suites' random workload (the sample shop's day: renames, moves and
        unset emails, retitles, host IP changes, log lines in and out, reviews in, re-rated,
        hidden, moved and out, new orders, status changes, cancelled orders), start it and time
        it until every source's marker is applied. Then every copy is checked against the
        sources. CPU is the process's whole life (start-up included: the same for every
        backlog, it vanishes in a long catch-up)."""
        say("realistic catch-up, %s: seeding the shop" % who)
        self.start_server()
        db, meta = self.client[self.dbname], self.dbname + "_meta"
        sync = None
        try:
            self.shop.seed(0)
            seed.fill_recent_arrays(db)  # what a backfill does before the streams take over
            mappings = write_mappings(self.dbname)
            create_recommended_indexes(db, mappings)
            sync = self.start_sync(who, meta, mappings, None)
            self.settle()
            code = sync.stop()
            if who == "denormd" and code != 0:
                raise AssertionError("denormd did not stop cleanly:\n" + self.denormd.log()[-3000:])
            start = self.client.admin.command("ping")["operationTime"]
            # The same random workload for every synchronizer: same seed, same data.
            work = ShopDay(db, random.Random(11))
            say("  writing %d changes while %s is stopped" % (self.realistic_backlog, who))
            _, written_s = self.gen.drive(work.event, None, count=self.realistic_backlog)
            end = self.client.admin.command("ping")["operationTime"]
            n = self.source_events(start, end)
            checks = self.shop.write_markers(ALL_SOURCES)
            t0, s0 = time.time(), self.server_proc.cpu()
            sync = self.start_sync(who, meta, mappings, start)
            with PeakRss(self.sync_proc) as rss:
                ok = wait_markers(checks, 120 if self.quick else 3600, lambda: sync.proc.poll() is None)
                t1 = time.time()
            if not ok:
                raise AssertionError("realistic catch-up: %s did not finish" % who)
            # CPU and events read include the echoes the catch-up's own writes caused: the
            # streams (or the server's filter, for denormd) still go through them after the
            # copies are done; echo_seconds is how long that took.
            self.settle()
            row = dict(backlog=n, changes=self.realistic_backlog, written_per_s=round(n / written_s),
                       seconds=round(t1 - t0, 2), events_per_s=round(n / (t1 - t0)),
                       echo_seconds=round(time.time() - t1, 2),
                       cpu_us_per_event=round(self.sync_proc.cpu() / n * 1e6, 1),
                       server_cpu_us_per_event=round((self.server_proc.cpu() - s0) / n * 1e6, 1),
                       rss_kib_peak=rss.peak_kib())
            if who == "denormd":
                m = self.denormd.metrics()
                if metric_total(m, "denormd_history_lost_total"):
                    raise AssertionError("the backlog fell off the server's history; catch-up measured a re-sync")
                read = metric_total(m, "denormd_events_total")
            else:
                read = sync.counters()[0]
            row["events_read_per_event"] = round(read / n, 2)
            oracle = Shop(db)
            oracle.delivered_snapshots = self.shop.delivered
            wrong = oracle.check()
            row["wrong"] = {}
            for diff in wrong:
                row["wrong"][diff[0]] = row["wrong"].get(diff[0], 0) + 1
            say("  %s: %s" % (who, row))
            # naive_sync.py is known to leave copies wrong (no refill, no fill, no unset): its
            # count is reported. denormd and the thread script must be exact.
            if wrong and who != "naive":
                raise AssertionError("realistic catch-up: %s left %d copies wrong, the first 5: %r" % (
                    who, len(wrong), wrong[:5]))
            return row
        finally:
            if sync is not None and sync.proc.poll() is None:
                sync.stop()
            self.stop_server()

    def source_events(self, start, end):
        """The change events the workload made in the database (an update that changed nothing
        makes none): those after `start` up to `end`."""
        n = 0
        with self.client[self.dbname].watch(start_at_operation_time=start, batch_size=1000,
                                            max_await_time_ms=200) as stream:
            while True:
                change = stream.try_next()
                if change is None:
                    break
                if start < change["clusterTime"] <= end:
                    n += 1
        return n

    # -- the sustained-throughput baselines: each script on a fresh server
    def run_baseline(self, who):
        """The step tests, fixed-rate rounds and coalescing denormd went through, for one script
        ("threads" or "naive") on a fresh server with the same seed; the fixed rates are 100 and
        1000/s, where a script may still keep up, rather than denormd's 1000 and 5000/s."""
        say("baseline %s: seeding the shop" % who)
        self.start_server()
        self.shop.seed(0)
        sync = self.start_sync(who, None, None, None)
        try:
            r = {}
            r["copy"] = self.step_test("copy", self.shop.copy_event, SOURCES["copy"])
            self.settle()
            r["recent"] = self.step_test("recent", self.shop.recent_event, SOURCES["recent"])
            self.settle()
            r["latency"] = {}
            for label, make, rate in (("copy", self.shop.copy_event, 100), ("copy", self.shop.copy_event, 1000),
                                      ("recent", self.shop.recent_event, 100),
                                      ("recent", self.shop.recent_event, 1000)):
                if self.quick and rate != 1000:
                    continue
                n, gen_s, t0, t1, cpu = self.fixed_rate(make, rate, SOURCES[label])
                lat = sync.latencies_between(t0, t1)
                row = dict(rate=rate, achieved=round(n / gen_s), events=n, p50_ms=round_or_none(percentile(lat, 0.5)),
                           p99_ms=round_or_none(percentile(lat, 0.99)),
                           cpu_us_per_event={k: round(v / n * 1e6, 1) for k, v in cpu.items()})
                r["latency"]["%s_%d" % (label, rate)] = row
                say("  latency %s %d/s: %s" % (label, rate, row))
                self.settle()
            ev0, w0 = sync.counters()
            cmds0, gen0 = update_commands(self.client), self.gen.commands
            n, gen_s = self.gen.drive(self.shop.hot_event, self.hot_updates, count=self.hot_updates)
            if not wait_markers(self.shop.write_markers(SOURCES["hot"]), 600, self.sync_proc.alive):
                raise AssertionError("%s coalescing: copies did not converge" % who)
            self.settle()
            ev1, w1 = sync.counters()
            cmds1 = update_commands(self.client)
            r["coalescing"] = dict(updates=n, seconds=round(gen_s, 2), keys=100, write_ops=w1 - w0,
                                   update_commands=None if cmds0 is None else cmds1 - cmds0 - (self.gen.commands - gen0 + 1))
            say("  coalescing: %s" % r["coalescing"])
            r["rss_kib_peak_streaming"] = self.sync_proc.status_kib("VmHWM")
            return r
        finally:
            sync.stop()
            self.stop_server()

    def run(self):
        self.results["machine"] = machine()
        t0, cpu0 = time.time(), cpu_times()
        only = self.args.only.split(",") if self.args.only else None
        if not only or set(only) & set(DENORMD_MEASUREMENTS + (HA,)):
            self.run_denormd()
        if not only or REALISTIC in only:
            self.results[REALISTIC] = self.realistic_catch_up()
        if not only and not self.args.skip_baseline:
            for _, who in SCRIPTS:
                self.results[BASELINE_KEYS[who]] = self.run_baseline(who)
            add_ratios(self.results)
        self.results["seconds"] = round(time.time() - t0)
        cpu1 = cpu_times()
        total = sum(cpu1) - sum(cpu0)
        # Time the hypervisor gave this VM's CPUs to others: a busy host moves tail latencies.
        self.results["machine"]["steal_percent"] = round(100 * (cpu1[7] - cpu0[7]) / max(total, 1), 1)
        return self.results


def create_recommended_indexes(db, mappings):
    """The indexes `denormd check` lists for the mappings, as a user following the README would
    create them (the seed makes only single-field ones): without them the newest-N refills sort
    every child of a parent and finding the parent that shows a deleted child scans them all."""
    out = subprocess.run([DENORMD, "check", "--mappings", mappings, "--db", db.name], check=True,
                         capture_output=True, text=True).stdout
    made = 0
    for m in re.finditer(r"^\s*index (\S+?)\.(\S+) (\{.*?\})\s+\(", out, re.M):
        if m.group(1) != db.name:
            continue
        db[m.group(2)].create_index(list(json.loads(m.group(3)).items()))
        made += 1
    if made == 0:
        raise AssertionError("denormd check listed no index:\n" + out)


def cpu_times():
    """The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:9]]


def ms(seconds):
    return None if seconds is None else round(seconds * 1000, 1)


def round_or_none(v):
    return None if v is None else round(v, 1)


def summarize_steps(steps):
    """Sustained: the highest rate written that was kept up with (a step the driver and the
    server could not write at full rate still counts for what they did write)."""
    kept = [st["achieved"] for st in steps if st["kept_up"]]
    last = steps[-1]
    if not last["kept_up"]:
        limit = "synchronizer"
    elif last["achieved"] < 0.9 * last["rate"]:
        limit = "writer (driver + server could not write faster)"
    else:
        limit = "not reached"
    return {"sustained": max(kept) if kept else 0, "limited_by": limit, "steps": steps}


def best_rate(t):
    return max([t["sustained"]] + [st["applied_per_s"] for st in t["steps"]])


def add_ratios(r):
    """denormd's ratios against each baseline the results hold."""
    for _, who in SCRIPTS:
        if BASELINE_KEYS[who] in r:
            r[RATIO_KEYS[who]] = ratios(r["denormd"], r[BASELINE_KEYS[who]])


def ratios(d, b):
    """denormd's results `d` against a baseline's `b`."""
    out = {}
    for k in ("copy", "recent"):
        # The baseline's best: the rate it kept up with, or what it applied per second when it
        # could not (its drain rate), whichever is higher. Conservative for denormd.
        best = best_rate(b[k])
        if best:
            out["throughput_" + k] = round(d[k]["sustained"] / best, 1)
    if b["coalescing"]["write_ops"]:
        out["coalescing_write_ops"] = round(b["coalescing"]["write_ops"] / max(1, d["coalescing"]["write_ops"]), 1)
    for k in set(d["latency"]) & set(b["latency"]):
        dc, bc = d["latency"][k]["cpu_us_per_event"]["denormd"], b["latency"][k]["cpu_us_per_event"]["denormd"]
        if dc:
            out["cpu_per_event_" + k] = round(bc / dc, 1)
    return out


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = 0
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024 // 1024
    build = "unknown"
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(EMULATOR))), "CMakeCache.txt")
    if os.path.exists(cache):
        m = re.search(r"CMAKE_BUILD_TYPE:STRING=(\S*)", open(cache).read())
        build = m.group(1) if m else build
    return dict(cpu=cpu, cores=os.cpu_count(), memory_gib=mem, kernel=platform.release(), build=build,
                server="DENORMD_TEST_URI" if REAL_URI else "mongo-emulator",
                date=datetime.date.today().isoformat())


def markdown(r):
    """The tables of what was measured (--only runs leave some out)."""
    m = r["machine"]
    parts = ["Machine: %s, %d cores, %d GiB, Linux %s; %s build; server: %s; %s; %d s in all; "
             "CPU steal by the hypervisor during the run: %s%%.\n" % (
                 m["cpu"], m["cores"], m["memory_gib"], m["kernel"], m["build"], m["server"], m["date"],
                 r.get("seconds", 0), m.get("steal_percent", "?"))]
    if all(k in r.get("denormd", {}) for k in DENORMD_MEASUREMENTS):
        parts.append(denormd_table(r))
    if REALISTIC in r:
        parts.append(realistic_table(r[REALISTIC]))
    if HA in r.get("denormd", {}):
        parts.append(ha_table(r["denormd"][HA]))
    return "\n".join(parts)


def ha_table(h):
    """--ha: catch-up by instances, and the failover times."""
    lines = ["| --ha (lease TTL %d ms) | %s |" % (h["ttl_ms"], " | ".join(
        "%d instance%s" % (row["instances"], "" if row["instances"] == 1 else "s") for row in h["catch_up"])),
             "|---|" + "---|" * len(h["catch_up"]),
             "| Copy catch-up of %d source events: source events/s | %s |" % (
                 h["backlog"], " | ".join("{:,}".format(row["events_per_s"]) for row in h["catch_up"]))]
    if h["failovers_s"]:
        lines.append("\nFailover after kill -9 of the instance holding the most units, until every unit is held "
                     "again (%d kills): median %.2f s, max %.2f s.\n" % (
                         len(h["failovers_s"]), h["failover_median_s"], h["failover_max_s"]))
    return "\n".join(lines) + "\n"


def realistic_table(c):
    """denormd beside the thread-per-collection script and the naive loop, catching up the
    same backlog."""
    who = [w for w in ("denormd", "threads", "naive") if w in c]
    d = c["denormd"]
    lines = ["| Realistic catch-up: %d source events (%d random changes) written while stopped | %s |" % (
        d["backlog"], d["changes"], " | ".join({"denormd": "denormd", "threads": "thread per collection",
                                                "naive": "naive loop"}[w] for w in who)),
             "|---|" + "---|" * len(who)]

    def row(name, fmt):
        lines.append("| %s | %s |" % (name, " | ".join(fmt(c[w], w) for w in who)))

    row("Source events/s until all applied", lambda v, w: ("**%d** (%.1f s)" if w == "denormd" else "%d (%.1f s)") % (
        v["events_per_s"], v["seconds"]))
    row("… then until the echoes of its writes were read (s)", lambda v, w: "%.1f" % v["echo_seconds"])
    row("… denormd's rate ÷ this one", lambda v, w: "" if w == "denormd" else
        "%s×" % c["ratio_" + w]["events_per_s"])
    row("CPU µs per source event, the synchronizer's process (server)",
        lambda v, w: "%s (%s)" % (v["cpu_us_per_event"], v["server_cpu_us_per_event"]))
    row("… this one's CPU ÷ denormd's", lambda v, w: "" if w == "denormd" else
        "%s×" % c["ratio_" + w]["cpu_per_event"])
    row("Peak RSS (MiB)", lambda v, w: "%.1f" % (v["rss_kib_peak"] / 1024))
    row("Change events read per source event (echoes included)", lambda v, w: "%.2f" % v["events_read_per_event"])
    row("Copies wrong once everything was applied", lambda v, w: "%d%s" % (
        sum(v["wrong"].values()), " (%s)" % ", ".join("%s %d" % kv for kv in sorted(v["wrong"].items()))
        if v["wrong"] else ""))
    return "\n".join(lines) + "\n"


def denormd_table(r):
    """denormd's figures, each beside the thread script's and, in a second row "… naive loop",
    the naive loop's (results from before the thread script was measured here have only the
    naive loop's, in the first row)."""
    d = r["denormd"]
    names = {"threads": "thread per collection", "naive": "naive loop"}
    bases = [(BASELINE_KEYS[who], RATIO_KEYS[who], names[who]) for _, who in SCRIPTS if BASELINE_KEYS[who] in r]
    header = "; ".join([bases[0][2]] + ["%s in the “… %s” rows" % (name, name) for _, _, name in bases[1:]]) \
        if bases else "baseline"
    lines = ["| Measurement | denormd | %s | ratio |" % header, "|---|---|---|---|"]

    def row(name, dv, bv="", ratio=""):
        lines.append("| %s | %s | %s | %s |" % (name, dv, bv, ratio))

    def compare(name, dv, bv, ratio=lambda rat: ""):
        """denormd's row with the first baseline's cell bv(results) and ratio cell
        ratio(ratios), then a row for each other baseline that has a figure."""
        if not bases:
            row(name, dv)
        for i, (key, rat_key, who) in enumerate(bases):
            cell = bv(r[key])
            if i == 0 or cell != "":
                row(name if i == 0 else "… " + who, dv if i == 0 else "", cell, ratio(r.get(rat_key, {})))

    def times(key):
        return lambda rat: "%s×" % rat[key] if key in rat else ""

    def last_step(t):
        st = t["steps"][-1]
        return "%d/s written, %d/s applied" % (st["achieved"], st["applied_per_s"])

    for k in ("copy", "recent"):
        compare("Sustained throughput, %s mappings (source events/s kept up with)" % k,
                "**%d** (limit: %s)" % (d[k]["sustained"], d[k]["limited_by"]),
                lambda b: "**%d** (best applied rate: %d)" % (b[k]["sustained"], best_rate(b[k])),
                times("throughput_" + k))
        compare("… at the last step (%s)" % k, last_step(d[k]), lambda b: last_step(b[k]))
    keys = sorted(set(d["latency"]).union(*(r[key]["latency"] for key, _, _ in bases)),
                  key=lambda k: (k.split("_")[0], int(k.split("_")[1])))
    fmt = lambda v: "%s / %s" % (v["p50_ms"], v["p99_ms"]) + (  # noqa: E731
        " (p99 of %d rounds: %s)" % (v["rounds"], ", ".join(str(x) for x in v["p99_ms_all"]))
        if v.get("rounds", 1) > 1 else "") + (
        "" if v["achieved"] >= 0.9 * v["rate"] else " (only %d/s written)" % v["achieved"])
    for k in keys:
        dv = d["latency"].get(k)
        rate, kind = k.split("_")[1], k.split("_")[0]
        compare("Apply latency p50 / p99 (ms), %s mappings at %s events/s" % (kind, rate), fmt(dv) if dv else "",
                lambda b: fmt(b["latency"][k]) if k in b["latency"] else "")
    for k in keys:
        dv = d["latency"].get(k)
        rate, kind = k.split("_")[1], k.split("_")[0]
        compare("CPU µs per source event, %s at %s/s (= CPU s per 100k events × 10)" % (kind, rate),
                "%s (%s per event read, echoes included)" % (dv["cpu_us_per_event"]["denormd"],
                                                            dv["denormd_cpu_us_per_event_read"]) if dv else "",
                lambda b: b["latency"][k]["cpu_us_per_event"]["denormd"] if k in b["latency"] else "",
                times("cpu_per_event_" + k))
    c = d["catch_up"]
    row("Catch-up: %d events written while stopped (source events/s until all applied)" % c["backlog"],
        "**%d** (%.1f s; %d events read, echoes included)" % (c["events_per_s"], c["seconds"], c["events_read"]))
    server = " (server %s)" % c["server_cpu_us_per_event"] if "server_cpu_us_per_event" in c else ""
    row("Catch-up: denormd CPU µs per source event / denormd's peak RSS (MiB)",
        "%s%s / **%.1f**" % (c["cpu_us_per_event"], server, c["rss_kib_peak"] / 1024))
    compare("Peak RSS while streaming (MiB)", "%.1f" % (d["rss_kib_peak_streaming"] / 1024),
            lambda b: "%.1f" % (b["rss_kib_peak_streaming"] / 1024))
    f = d["fanout"]
    row("Fan-out: one host IP change to %d log messages" % f["documents"],
        "%.2f s, %d write op; then the %d change events it caused read in %.1f s (%d/s)" % (
            f["seconds"], f["write_ops"], f["echo_events"], f["echo_seconds"],
            f["echo_events"] / max(f["echo_seconds"], 0.001)))
    co = d["coalescing"]
    compare("Coalescing: %d updates over %d customers in %.1f s: write ops; update commands" % (
        co["updates"], co["keys"], co["seconds"]),
        "%d; %s" % (co["write_ops"], co["update_commands"]),
        lambda b: "%d; %s" % (b["coalescing"]["write_ops"], b["coalescing"]["update_commands"]),
        lambda rat: "%s× fewer ops" % rat["coalescing_write_ops"] if "coalescing_write_ops" in rat else "")
    if "server_ceilings" in r:
        lines += ["", "Test-server ceilings (one pymongo client, bulks of 1000, nothing else running): "
                  "source updates %(source_updates)d/s; denormd's copy update_many %(copy_update_many)d/s; "
                  "copy-in-array update_many %(copy_in_array_update_many)d/s; recent $push "
                  "%(recent_push)d/s; change-stream read %(change_stream_read)d events/s." % r["server_ceilings"]]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="seconds-long smoke run (CI)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--markdown", help="write the table here")
    p.add_argument("--skip-baseline", action="store_true", help="measure denormd only, not the baseline scripts")
    p.add_argument("--render", metavar="RESULTS_JSON", help="print the table of an earlier run's --json output")
    p.add_argument("--only", help="measurements to run, comma-separated: copy, recent, latency, coalescing, "
                   "fanout, catch_up (of denormd; the main table needs all), ha (the catch-up by "
                   "--ha instances, and failover), realistic_catch_up (denormd and both scripts)")
    p.add_argument("--realistic-events", type=int, metavar="N",
                   help="random changes in the realistic catch-up's backlog (default 100000; --quick 1000)")
    p.add_argument("--ha-ttl-ms", type=int, default=None, metavar="MS",
                   help="for the ha measurement: --lease-ttl-ms of the instances (default 10000; --quick 2000)")
    p.add_argument("--ha-kills", type=int, default=None, metavar="N",
                   help="for the ha measurement: instances killed one after another (default 10; --quick 2)")
    p.add_argument("--latency-rounds", type=int, metavar="N",
                   help="rounds of each fixed-rate latency measurement (default 3; --quick 1)")
    p.add_argument("--backlog", type=int, metavar="N",
                   help="source events written while denormd is stopped, for the catch-up (default 500000)")
    p.add_argument("--fanout", type=int, metavar="N",
                   help="log messages of the one host whose IP change is fanned out (default 1000000)")
    p.add_argument("--denormd-arg", action="append", help="extra flag(s) for denormd run, e.g. '--linger-ms 2'")
    args = p.parse_args()
    if args.render:
        with open(args.render) as f:
            results = json.load(f)
        for who in ("denormd",) + tuple(BASELINE_KEYS.values()):
            for k in ("copy", "recent"):
                if k in results.get(who, {}):
                    results[who][k] = summarize_steps(results[who][k]["steps"])
        add_ratios(results)
        print(markdown(results))
        return
    unknown = set(args.only.split(",") if args.only else ()) - set(DENORMD_MEASUREMENTS + (REALISTIC, HA))
    if unknown:
        p.error("--only: unknown measurement(s) %s" % ", ".join(sorted(unknown)))
    if args.ha_ttl_ms is None:
        args.ha_ttl_ms = 2000 if args.quick else 10000
    if args.ha_kills is None:
        args.ha_kills = 2 if args.quick else 10
    results = Bench(args).run()
    text = json.dumps(results, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    table = markdown(results)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.only:
        print(json.dumps({k: results[k] for k in ("denormd", REALISTIC) if k in results}, indent=1))
    else:
        print(table)


if __name__ == "__main__":
    main()
