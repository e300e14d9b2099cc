"""What the hand-written synchronizers (naive_sync.py, thread_sync.py) share: the six sample
mappings as such a script hard-codes them, and the progress lines e2e_bench.py reads.

A script is run as a file (`python3 tests/bench/naive_sync.py URI DB [START]`), so this module
is imported from the script's own folder, not as part of the tests package.
"""
import datetime
import json
import threading
import time

from bson import Timestamp


class Computed:
    """A computed field as a script computes it itself: a function of the source document, and
    the source paths it reads."""

    def __init__(self, compute, *reads):
        self.compute = compute
        self.reads = reads


def host_label(host):
    """logmsgs-host's label, {"$concat": ["$name", " (", {"$toString": "$ipaddr"}, ")"]}, for the
    strings the shop writes (None, left out, when a part is missing)."""
    if host.get("name") is None or host.get("ipaddr") is None:
        return None
    return "%s (%s)" % (host["name"], host["ipaddr"])


# mappings/*.json, the copy and recent kinds: (copy name, source path or Computed) pairs,
# newest-N arrays.
OPEN = {"status": {"$nin": ["DELIVERED", "CANCELLED"]}}
CUSTOMER_COPY = (("name", "name"), ("email", "email"), ("city", "address.city"))
PRODUCT_COPY = (("title", "title"), ("sku", "sku"))
HOST_COPY = (("name", "name"), ("ipaddr", "ipaddr"), ("label", Computed(host_label, "name", "ipaddr")))
RECENT_ORDERS = (("orderId", "_id"), ("total", "total"), ("status", "status"), ("createdAt", "createdAt"))
RECENT_REVIEWS = (("reviewId", "_id"), ("stars", "stars"), ("excerpt", "text"), ("createdAt", "createdAt"))
RECENT_LOGS = (("logId", "_id"), ("time", "time"), ("message", "message"))
VISIBLE = {"hidden": {"$ne": True}}


def visible(review):
    return review.get("hidden") is not True


# Only the operations that change documents (not drops or renames of collections).
PIPELINE = [{"$match": {"operationType": {"$in": ["insert", "update", "replace", "delete"]}}}]


def pick(doc, fields):
    """{copy name: value} of the source paths present in `doc` (a missing path is left out), and
    of the computed fields."""
    out = {}
    for name, path in fields:
        if isinstance(path, Computed):
            v = path.compute(doc)
        else:
            v = doc
            for part in path.split("."):
                v = v.get(part) if isinstance(v, dict) else None
        if v is not None:
            out[name] = v
    return out


def source_paths(fields):
    """The source paths `fields` read."""
    return [p for _, path in fields for p in (path.reads if isinstance(path, Computed) else (path,))]


def start_at(args):
    """The optional cluster time "T.I" the streams start at (the benchmark's catch-up passes the
    time it stopped the script at; these scripts keep no resume token)."""
    if not args:
        return None
    t, i = args[0].split(".")
    return Timestamp(int(t), int(i))


class Progress:
    """Prints {"ready": true} once the streams are open, then every 0.5 s one line
    {"events": N, "writes": W, "lat_ms": [apply latency of each event that wrote, since the last
    line]}. Safe to count from several threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.state = {"events": 0, "writes": 0, "lat_ms": []}

    def ready(self):
        print(json.dumps({"ready": True}), flush=True)
        threading.Thread(target=self._report, daemon=True).start()

    def _report(self):
        while True:
            time.sleep(0.5)
            with self.lock:
                line = json.dumps(self.state)
                self.state["lat_ms"] = []
            print(line, flush=True)

    def count(self, change, writes):
        wall = change.get("wallTime")
        lat = None
        if isinstance(wall, datetime.datetime):
            lat = time.time() * 1000 - wall.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
        with self.lock:
            self.state["events"] += 1
            self.state["writes"] += writes
            if lat is not None and writes:
                self.state["lat_ms"].append(round(lat, 2))
