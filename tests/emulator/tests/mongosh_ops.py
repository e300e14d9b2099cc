#!/usr/bin/python3
"""The replica-set and monitoring commands docs/operations.md has operators run, through
mongosh 2.x (npm) against mongo-emulator: rs.status(), rs.conf(), rs.printReplicationInfo(),
db.getReplicationInfo(), getParameter/setParameter, replSetResizeOplog and top. Each check reads
what mongosh prints and compares it with the server's state read through pymongo.

mongosh comes from DENORMD_MONGOSH (a path; an unusable one fails), else .cache/mongosh
(scripts/install-deps.sh puts it there), else CACHE_DIR, where this test installs it (npm
install mongosh@2, bounded in time).
It exits 77 (CTest: skipped), saying why, only when mongosh cannot be had: no node/npm, or npm
could not install it (offline). Every test starts a server of its own.

Usage: mongosh_ops.py PATH_TO_MONGO_EMULATOR CACHE_DIR   (exit 77 = skipped)
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import pymongo
except ImportError:
    print("pymongo is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pymongo_compat import start_emulator  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EMULATOR_PATH = None
MONGOSH = None
HOME = None
KIB = 1024  # every kept oplog entry counts 1 KiB (tests/emulator/README.md)


def find_or_install_mongosh(cache):
    """The mongosh binary, or (None, why not)."""
    for prefix in (os.path.join(REPO, ".cache", "mongosh"), cache):
        candidate = os.path.join(prefix, "node_modules", ".bin", "mongosh")
        if os.access(candidate, os.X_OK):
            return candidate, None
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None, "node or npm is not installed (scripts/install-deps.sh installs nodejs)"
    os.makedirs(cache, exist_ok=True)
    try:
        r = subprocess.run(["npm", "install", "--prefix", cache, "--no-audit", "--no-fund",
                            "--loglevel=error", "mongosh@2"],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "npm install mongosh@2 did not finish in 300 s (no registry access?)"
    candidate = os.path.join(cache, "node_modules", ".bin", "mongosh")
    if r.returncode != 0 or not os.access(candidate, os.X_OK):
        return None, "npm install mongosh@2 failed (offline?): " + r.stderr.strip()[-500:]
    return candidate, None


def shell_env():
    env = dict(os.environ)
    env["HOME"] = HOME  # mongosh's logs and config go to a directory of the test's own
    env["MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING"] = "1"
    return env


def mongosh(uri, script, check=True):
    """Runs `mongosh --quiet --eval script`; its stdout."""
    r = subprocess.run([MONGOSH, "--quiet", "--norc", uri, "--eval", script],
                       capture_output=True, text=True, timeout=120, env=shell_env())
    if check and r.returncode != 0:
        raise AssertionError("mongosh failed (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
    return r.stdout


def mongosh_json(uri, expression):
    """The value of a JavaScript expression, as canonical Extended JSON, through mongosh."""
    out = mongosh(uri, "print('@@' + EJSON.stringify(%s, {relaxed: false}))" % expression)
    lines = [l for l in out.splitlines() if l.startswith("@@")]
    if len(lines) != 1:
        raise AssertionError("no JSON line in mongosh's output: %r" % out)
    return json.loads(lines[0][2:])


def number(v):
    """A number from canonical Extended JSON."""
    if isinstance(v, dict):
        for key in ("$numberInt", "$numberLong", "$numberDouble"):
            if key in v:
                return float(v[key])
    return float(v)


def timestamp(v):
    return (v["$timestamp"]["t"], v["$timestamp"]["i"])


class MongoshOps(unittest.TestCase):
    def setUp(self):
        self.proc, replica_uri = start_emulator(EMULATOR_PATH, "--oplog-max-events", "200")
        host_port = replica_uri[len("mongodb://"):].split("/")[0]
        self.uri = "mongodb://%s/?directConnection=true" % host_port  # as docs/operations.md
        self.client = pymongo.MongoClient(replica_uri, serverSelectionTimeoutMS=5000)
        self.shop = self.client.shop

    def tearDown(self):
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def oplog_end(self, direction):
        return self.client.local["oplog.rs"].find().sort("$natural", direction).limit(1)[0]

    def test_rs_status_and_conf_describe_this_member(self):
        self.shop.c.insert_many([{"_id": i} for i in range(3)])
        with self.shop.c.watch():  # moves the cluster time past the newest oplog entry
            pass
        got = mongosh_json(self.uri, "{status: rs.status(), conf: rs.conf(), hello: db.hello()}")
        status, conf, hello = got["status"], got["conf"], got["hello"]
        self.assertEqual(status["set"], "rs0")
        self.assertEqual(number(status["myState"]), 1)
        self.assertEqual(len(status["members"]), 1)
        me = status["members"][0]
        self.assertEqual(me["name"], hello["me"])
        self.assertEqual(me["stateStr"], "PRIMARY")
        self.assertTrue(me["self"])
        newest = self.oplog_end(-1)
        self.assertEqual(timestamp(me["optime"]["ts"]), (newest["ts"].time, newest["ts"].inc))
        self.assertLess(timestamp(me["optime"]["ts"]), timestamp(status["operationTime"]))
        self.assertEqual(conf["_id"], hello["setName"])
        self.assertEqual([m["host"] for m in conf["members"]], hello["hosts"])
        self.assertEqual(number(conf["version"]), number(hello["setVersion"]))
        self.assertEqual(conf["protocolVersion"], {"$numberLong": "1"})

    def test_replication_info_reports_the_bounded_history(self):
        self.shop.c.insert_one({"_id": 1})
        time.sleep(1.2)
        self.shop.c.insert_many([{"_id": i} for i in range(2, 6)])
        oldest, newest = self.oplog_end(1), self.oplog_end(-1)
        kept = self.client.local.command("collStats", "oplog.rs")["count"]
        info = mongosh_json(self.uri, "db.getReplicationInfo()")
        # --oplog-max-events 200 at 1 KiB each; used: the kept entries.
        self.assertEqual(number(info["configuredLogSizeMB"]), 200 * KIB / (1024 * 1024))
        self.assertEqual(number(info["logSizeMB"]), 200 * KIB / (1024 * 1024))
        self.assertAlmostEqual(number(info["usedMB"]),
                               math.ceil(kept * KIB / (1024 * 1024) * 100) / 100)
        self.assertEqual(number(info["timeDiff"]), newest["ts"].time - oldest["ts"].time)
        self.assertGreaterEqual(number(info["timeDiff"]), 1)
        printed = mongosh(self.uri, "rs.printReplicationInfo()")
        self.assertIn("actual oplog size\n'0.1953125 MB'", printed)
        self.assertIn("configured oplog size\n'0.1953125 MB'", printed)
        self.assertIn("log length start to end\n'%d secs" % number(info["timeDiff"]), printed)
        self.assertIn("oplog first event time", printed)
        self.assertIn("oplog last event time", printed)

    def test_get_and_set_parameter(self):
        got = mongosh_json(self.uri, """(() => {
            const all = db.adminCommand({getParameter: '*'});
            const set = db.adminCommand({setParameter: 1, transactionLifetimeLimitSeconds: 15});
            const one = db.adminCommand({getParameter: 1, transactionLifetimeLimitSeconds: 1});
            let unknown = null;
            try { db.adminCommand({setParameter: 1, noSuchParameter: 1}); }
            catch (e) { unknown = {code: e.code, message: e.message}; }
            return {all, set, one, unknown};
        })()""")
        self.assertEqual(got["all"]["featureCompatibilityVersion"], {"version": "6.0"})
        self.assertEqual(number(got["all"]["transactionLifetimeLimitSeconds"]), 60)
        self.assertIs(got["all"]["internalChangeStreamRespectsReadPreference"], False)
        self.assertEqual(number(got["set"]["was"]), 60)
        self.assertEqual(number(got["one"]["transactionLifetimeLimitSeconds"]), 15)
        self.assertEqual(number(got["unknown"]["code"]), 72)
        self.assertIn("attempted to set unrecognized parameter [noSuchParameter]",
                      got["unknown"]["message"])
        # The server kept it: another client reads the new value.
        self.assertEqual(self.client.admin.command(
            {"getParameter": 1, "transactionLifetimeLimitSeconds": 1})[
                "transactionLifetimeLimitSeconds"], 15)

    def test_resize_oplog_as_the_sizing_section_does(self):
        self.shop.c.insert_one({"_id": "first"})  # getReplicationInfo() needs an entry
        got = mongosh_json(self.uri, """(() => {
            const resized = db.adminCommand({replSetResizeOplog: 1, size: 1024});
            const retained = db.adminCommand({replSetResizeOplog: 1, minRetentionHours: 80});
            let small = null;
            try { db.adminCommand({replSetResizeOplog: 1, size: 10}); }
            catch (e) { small = e.code; }
            return {resized, retained, small, info: db.getReplicationInfo(),
                    stats: db.getSiblingDB('local').oplog.rs.stats()};
        })()""")
        self.assertEqual(number(got["resized"]["ok"]), 1)
        self.assertEqual(number(got["retained"]["ok"]), 1)
        self.assertEqual(number(got["small"]), 51024)
        self.assertEqual(number(got["info"]["configuredLogSizeMB"]), 1024)
        self.assertEqual(number(got["stats"]["maxSize"]), 1024 * 1024 * 1024)
        self.assertTrue(got["stats"]["capped"])
        # The larger bound keeps more than the 200 entries the server started with: the create,
        # the first insert and these 300.
        self.shop.c.insert_many([{"_id": i} for i in range(300)])
        self.assertEqual(self.client.local.command("collStats", "oplog.rs")["count"], 302)

    def test_top_counts_what_the_shell_ran(self):
        got = mongosh_json(self.uri, """(() => {
            const shop = db.getSiblingDB('shop');
            shop.c.insertMany([{_id: 1}, {_id: 2}]);
            shop.c.find().toArray();
            shop.c.updateOne({_id: 1}, {$set: {a: 1}});
            shop.c.deleteOne({_id: 2});
            let refused = null;
            try { shop.runCommand({top: 1}); } catch (e) { refused = e.code; }
            return {top: db.adminCommand({top: 1}), refused};
        })()""")
        totals = got["top"]["totals"]
        self.assertEqual(totals["note"], "all times in microseconds")
        c = totals["shop.c"]
        counts = {k: number(v["count"]) for k, v in c.items()}
        self.assertEqual(counts["insert"], 1)
        self.assertEqual(counts["queries"], 1)
        self.assertEqual(counts["update"], 1)
        self.assertEqual(counts["remove"], 1)
        self.assertEqual(counts["writeLock"], 3)
        self.assertEqual(counts["total"], counts["readLock"] + counts["writeLock"])
        self.assertEqual(number(c["total"]["time"]),
                         number(c["readLock"]["time"]) + number(c["writeLock"]["time"]))
        self.assertEqual(number(got["refused"]), 13)


def main():
    global EMULATOR_PATH, MONGOSH, HOME
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    if os.environ.get("DENORMD_SKIP_NODE"):
        print("skipped: DENORMD_SKIP_NODE is set")
        return 77
    EMULATOR_PATH = sys.argv[1]
    MONGOSH, why = os.environ.get("DENORMD_MONGOSH"), None
    if MONGOSH and not os.access(MONGOSH, os.X_OK):  # a wrong setting is an error, not a skip
        print("DENORMD_MONGOSH=%s is not executable" % MONGOSH)
        return 1
    if not MONGOSH:
        MONGOSH, why = find_or_install_mongosh(sys.argv[2])
    if MONGOSH is None:
        print("skipped: mongosh is not available:", why)
        return 77
    HOME = tempfile.mkdtemp(prefix="mongosh_ops_")
    try:
        version = subprocess.run([MONGOSH, "--version"], capture_output=True, text=True,
                                 timeout=60, env=shell_env())
        if version.returncode != 0:
            print("mongosh does not run:", version.stderr.strip())
            return 1
        print("mongosh", version.stdout.strip(), "with node", subprocess.run(
            ["node", "--version"], capture_output=True, text=True).stdout.strip())
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(MongoshOps)
        result = unittest.TextTestRunner(verbosity=2).run(suite)
        return 0 if result.wasSuccessful() else 1
    finally:
        shutil.rmtree(HOME, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
