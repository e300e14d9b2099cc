"""The bases of the end-to-end suites.

DaemonTestCase: a fresh database name and the sample mappings for it; the denormd processes a
test starts through it are killed afterwards (their logs printed when it failed), and the
test server it keeps in self.emulator is stopped. ShopTestCase adds a fresh test server (or a
fresh database on DENORMD_TEST_URI), a client, a Shop to seed and check, and denormd commands
(their output printed when it failed)."""
import subprocess
import unittest
import uuid
import zlib

import pymongo
from bson import Timestamp, json_util

from tests.integration.harness import DENORMD, Denormd, Emulator, REAL_URI, case_failed, wait_until, write_mappings
from tests.integration.shop import Shop


def kill_daemons(case, daemons):
    """kill -9 of every daemon a test started, each one's log printed when the test failed;
    whether it failed."""
    failed = case_failed(case)
    for d in daemons:
        d.kill9()
        if failed:
            print("---- denormd log (%s) ----\n%s" % (case.id(), d.log()[-20000:]))
    return failed


class DaemonTestCase(unittest.TestCase):
    DB_PREFIX = "shop_"

    def setUp(self):
        self.emulator = None
        self.dbname = self.DB_PREFIX + uuid.uuid4().hex[:8]
        self.mappings = write_mappings(self.dbname)
        self.daemons = []

    def tearDown(self):
        failed = kill_daemons(self, self.daemons)
        self.clean_up(failed)
        if self.emulator:
            self.emulator.stop()

    def clean_up(self, failed):
        """What a subclass leaves on the server, undone once its daemons are gone and before the
        test server stops."""

    def daemon(self, uri, *extra, mappings=None, ready=True, auto_backfill=False, lifecycle=True):
        """`denormd run` against `uri` and this test's database; once ready unless told not to wait."""
        d = Denormd(uri, self.dbname, mappings or self.mappings, *extra, auto_backfill=auto_backfill,
                    lifecycle=lifecycle)
        self.daemons.append(d)
        if ready:
            wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="denormd ready")
        return d


class ShopTestCase(DaemonTestCase):
    # Test-server options per test method name, for tests that need a particular server.
    EMULATOR_ARGS = {}

    def setUp(self):
        super().setUp()
        self.emulator = None if REAL_URI else Emulator(*self.EMULATOR_ARGS.get(self._testMethodName, ()))
        self.uri = REAL_URI or self.emulator.uri
        self.client = pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=10000)
        self.db = self.client[self.dbname]
        # A stable seed per test (str hashes differ per process), so a failure can be re-run as it was.
        self.shop = Shop(self.db, seed=zlib.crc32(self.id().encode()) % 1000)
        self.outputs = []

    def clean_up(self, failed):
        if failed:
            for args, rc, out, err in self.outputs[-6:]:
                print("---- denormd %s: exit %s ----\n%s\n%s" % (" ".join(args[:2]), rc, out[-6000:], err[-6000:]))
        try:
            for name in ("failCommand", "failGetMoreAfterCursorCheckout"):
                self.client.admin.command({"configureFailPoint": name, "mode": "off"})
        except pymongo.errors.OperationFailure:
            pass  # a server without test commands
        self.client.drop_database(self.dbname)
        self.client.close()

    def start(self, *extra, mappings=None, auto_backfill=False):
        return self.daemon(self.uri, *extra, mappings=mappings, auto_backfill=auto_backfill)

    def cmd(self, command, *args, timeout=180):
        """Runs `denormd COMMAND` against this test's database; returns (exit code, stdout, stderr)."""
        argv = [DENORMD, command, "--uri", self.uri, "--db", self.dbname, "--mappings", self.mappings, *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        self.outputs.append((argv[1:], p.returncode, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def events_kept_since(self, since):
        """How many change events from `since` (UNIX seconds, as --start-at takes them) to now
        denormd's streams keep, each through the server-side filter its last run stored with
        its checkpoint: what a replay from `since` reads at least."""
        total = 0
        for cp in self.db.denormd_checkpoints.find():
            db, coll = cp["_id"].split(".", 1)
            pipeline = json_util.loads(cp["filter"])["f"] if cp.get("filter") else []
            with self.client[db][coll].watch(pipeline, start_at_operation_time=Timestamp(int(since), 0),
                                             max_await_time_ms=200) as stream:
                while stream.try_next() is not None:
                    total += 1
        return total

    def converge(self, timeout=60):
        wait_until(self.shop.check, timeout=timeout, interval=0.25, message="dependents in line with sources")

    def fail_point(self, name="failCommand", **data):
        mode = data.pop("mode", {"times": 1})
        try:
            self.client.admin.command({"configureFailPoint": name, "mode": mode,
                                       "data": dict(data, appName="denormd")})
        except pymongo.errors.OperationFailure as e:
            self.skipTest("the server does not allow fail points (enableTestCommands): %s" % e)
