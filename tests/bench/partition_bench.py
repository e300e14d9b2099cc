"""Partitioned streams, measured (docs/performance.md, "Partitioned streams"):

    /usr/bin/python3 -m tests.bench.partition_bench [--events N] [--hosts H] [--markdown FILE]

A backlog of N log messages (hosts-recent-logs: a recent mapping reading logmsgs, each host
keeps its newest 100; logmsgs-host, the copy of each host into its messages, is loaded too)
written while the instances are paused (SIGSTOP, within their leases), then caught up by:
one instance reading logmsgs as one stream; one instance with --partitions logmsgs=4; two --ha
instances with --partitions logmsgs=4. Each on a fresh test server with the same seed. For each:
how long from the resume until every message is applied (and so the rate), the events each instance read from
logmsgs (a partition reads its share, plus the deletes every partition reads), and the CPU
each instance and the test server spent. Every run ends with the dependents checked: a wrong
result fails the run. --events 500 is the CTest smoke form; its numbers mean nothing.
"""
import argparse
import os
import signal
import sys
import time

import pymongo

from tests.bench.aggregate_bench import cpu_seconds
from tests.integration.harness import Denormd, Emulator, wait_until, write_mappings
from tests.integration.seed import host_id, logmsg

DB = "bench"
MAPPINGS = ("hosts-recent-logs", "logmsgs-host")


def seed(db, hosts):
    db.hosts.insert_many([{"_id": host_id(i), "name": "host %d" % i, "ipaddr": "10.0.0.%d" % i,
                           "recentLogs": []}
                          for i in range(1, hosts + 1)])


def burst(db, n, hosts):
    """n messages in batches of 500, round robin over the hosts, as one client writes them."""
    docs = []
    hs = {h["_id"]: h for h in db.hosts.find()}
    for i in range(n):
        # With the host's copy, as the application writes it (logmsgs-host keeps it current).
        docs.append(logmsg(1_000_000 + i, hs[host_id(i % hosts + 1)], i, "message %d" % i))
        if len(docs) == 500:
            db.logmsgs.insert_many(docs, ordered=False)
            docs = []
    if docs:
        db.logmsgs.insert_many(docs, ordered=False)


def check(db):
    """Every host lists its newest messages."""
    for h in db.hosts.find():
        newest = [m["_id"] for m in db.logmsgs.find({"hostId": h["_id"]}).sort("time", -1).limit(100)]
        listed = [e["logId"] for e in h.get("recentLogs", [])]
        if listed != newest:
            raise SystemExit("host %s lists %s..., not %s..." % (h["_id"], listed[:3], newest[:3]))


def run(label, extra_per_instance, args):
    em = Emulator()
    client = pymongo.MongoClient(em.uri)
    db = client[DB]
    mappings = write_mappings(DB, names=MAPPINGS)
    seed(db, args.hosts)
    ds = [Denormd(em.uri, DB, mappings, *extra) for extra in extra_per_instance]
    try:
        for d in ds:
            wait_until(lambda: d.get("/readyz")[0] == 200, timeout=60, message="denormd ready")
        if len(ds) > 1:  # every unit held, spread over the instances
            wait_until(lambda: all(d.metric_sum("denormd_lease_held") >= 2 for d in ds), timeout=60,
                       message="units spread")
        # The backlog is written while the instances are paused (within their leases), then
        # caught up: the rate is theirs, not the writing client's.
        for d in ds:
            os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            burst(db, args.events, args.hosts)
        finally:
            t = client.admin.command("ping")["operationTime"]
            cpu0 = [cpu_seconds(d.proc.pid) for d in ds]
            server0 = cpu_seconds(em.proc.pid)
            began = time.time()
            for d in ds:
                os.kill(d.proc.pid, signal.SIGCONT)
        for d in ds:
            wait_until(lambda: d.get("/applied?after=%d:%d&timeout=4" % (t.time, t.inc))[0] == 200,
                       timeout=900, interval=0, message="the burst applied")
        took = time.time() - began
        cpu = [cpu_seconds(d.proc.pid) - c for d, c in zip(ds, cpu0)]
        server = cpu_seconds(em.proc.pid) - server0
        read = [sum(v for (n, labels), v in d.metrics().items() if n == "denormd_events_total"
                    and dict(labels)["source"].startswith(DB + ".logmsgs")) for d in ds]
        check(db)
        return dict(label=label, seconds=took, rate=args.events / took, read=read, cpu=cpu, server=server)
    finally:
        for d in ds:
            d.stop()
        client.close()
        em.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=40000)
    p.add_argument("--hosts", type=int, default=64)
    p.add_argument("--markdown", default=None)
    args = p.parse_args()
    parts = ["--partitions", DB + ".logmsgs=4"]
    # A lease long enough to outlast the pause while the backlog is written.
    ha = lambda name: ["--ha", "--instance-id", name, "--lease-ttl-ms", "60000"]  # noqa: E731
    results = [run("one instance, one stream", [[]], args),
               run("one instance, 4 partitions", [parts], args),
               run("two --ha instances, 4 partitions", [ha("a") + parts, ha("b") + parts], args)]
    lines = ["%d log messages (%d hosts) written while the instances were paused, then caught up;"
             " each run on a fresh test server." % (args.events, args.hosts), "",
             "| run | caught up in (s) | messages/s | events read from logmsgs, per instance | "
             "denormd CPU s, per instance | test server CPU s |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| %s | %.1f | %s | %s | %s | %.1f |" % (
            r["label"], r["seconds"], "{:,.0f}".format(r["rate"]),
            ", ".join("{:,.0f}".format(x) for x in r["read"]),
            ", ".join("%.1f" % c for c in r["cpu"]), r["server"]))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
