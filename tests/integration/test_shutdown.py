"""Stopping and readiness while MongoDB is away; stopping while a backfill runs; a backfill of a
NaN source ends; the operations' --timeout; re-syncs while the oplog keeps rolling; the driver's
own change-stream resumes counted."""
import json
import math
import os
import random
import re
import signal
import subprocess
import threading
import time
import unittest

from tests.integration.base import DaemonTestCase, ShopTestCase
from tests.integration.harness import (DENORMD, Emulator, copy_mapping, emulator_only, free_port, mapping_folder,
                                      stop_within, wait_until, write_mappings)
from tests.integration.shop import Shop

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def signal_masks(pid):
    """(blocked, caught) signal masks of a process, or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            text = f.read()
    except OSError:
        return None
    blocked = re.search(r"^SigBlk:\s*([0-9a-f]+)", text, re.M)
    caught = re.search(r"^SigCgt:\s*([0-9a-f]+)", text, re.M)
    if not blocked or not caught:
        return None
    return int(blocked.group(1), 16), int(caught.group(1), 16)


@unittest.skipUnless(emulator_only(), "kills and restarts the test server")
class ServerAwayTest(DaemonTestCase):
    """Starts (and kills) its test servers itself."""

    def start(self, uri):
        return self.daemon(uri, ready=False)

    def test_sigterm_exits_0_within_5s_while_the_server_is_unreachable_at_start(self):
        d = self.start("mongodb://127.0.0.1:%d/?replicaSet=rs0" % free_port())
        time.sleep(1.5)  # well inside the first wait for a server
        self.assertEqual(d.get("/readyz")[0], 503)
        code, _ = stop_within(d, 5)
        self.assertEqual(code, 0, d.log()[-4000:])
        self.assertNotIn("stop deadline passed", d.log())

    def test_readiness_follows_a_killed_and_restarted_server_and_sigterm_exits_0_within_5s(self):
        self.emulator = Emulator()
        port = self.emulator.port
        d = self.start(self.emulator.uri)
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="ready")

        self.emulator.proc.kill()
        self.emulator.proc.wait()
        killed = time.time()
        wait_until(lambda: d.get("/readyz")[0] == 503, timeout=6, interval=0.1,
                   message="/readyz 503 after the server was killed")
        status, body = d.get("/readyz")
        self.assertLess(time.time() - killed, 6)
        self.assertIn(self.dbname + ".customers", body)
        self.assertRegex(body, r"change stream failed|cannot open the change stream")

        self.emulator = Emulator("--port", str(port))  # a new, empty server on the same port
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=30, interval=0.2,
                   message="/readyz 200 after the server came back")

        self.emulator.proc.kill()
        self.emulator.proc.wait()
        wait_until(lambda: d.get("/readyz")[0] == 503, timeout=6, interval=0.1, message="503 again")
        time.sleep(1)
        code, _ = stop_within(d, 5)
        self.assertEqual(code, 0, d.log()[-4000:])
        # Every call into the driver gave up in time: the stop did not need its last resort.
        self.assertNotIn("stop deadline passed", d.log())

    def test_sigterm_exits_within_5s_in_every_mode_while_the_server_does_not_answer(self):
        """The server is frozen (SIGSTOP: it accepts connections and answers nothing), with and
        without --ha, after the instances have run a while (with --ha a lease round holds
        server calls). SIGTERM ends each within 5 s. (Before: with --ha the stop waited on the
        coordinator's round, 30 s and more.)"""
        self.emulator = Emulator()
        modes = {"one": (), "ha": ("--ha", "--instance-id", "h1", "--lease-ttl-ms", "2000")}
        for name, extra in modes.items():
            with self.subTest(mode=name):
                d = self.daemon(self.emulator.uri, *extra, ready=False)
                wait_until(lambda: d.get("/readyz")[0] == 200, timeout=20, message="ready")
                time.sleep(1.5)  # with --ha, rounds every 0.7 s
                os.kill(self.emulator.proc.pid, signal.SIGSTOP)
                try:
                    time.sleep(1.0)  # calls are under way and waiting
                    stop_within(d, 5)
                finally:
                    os.kill(self.emulator.proc.pid, signal.SIGCONT)

    def test_sigterm_at_the_very_start_exits_0(self):
        # From denormd's first instruction on, a stop at any moment of the start is a clean
        # stop. (The dynamic loader's milliseconds before it are out of any program's reach.)
        # A mapping with many fields keeps the start busy loading it for a while; denormd is
        # known to be running its own code once it blocks SIGTERM or has that file open.
        self.emulator = Emulator()
        with open(os.path.join(self.mappings, "orders-customer.json")) as f:
            big = json.load(f)
        big["name"] = "many-fields"
        big["into"] = "many"
        big["fields"] = {"f%d" % i: "a.f%d" % i for i in range(3000)}
        big_path = os.path.realpath(os.path.join(self.mappings, "many-fields.json"))
        with open(big_path, "w") as f:
            json.dump(big, f)

        def started(pid):
            masks = signal_masks(pid)
            if masks and masks[0] & SIGTERM_BIT:
                return True
            try:
                return any(os.readlink("/proc/%d/fd/%s" % (pid, fd)) == big_path
                           for fd in os.listdir("/proc/%d/fd" % pid))
            except OSError:
                return False

        rng = random.Random(7)
        for attempt in range(20):
            proc = subprocess.Popen([DENORMD, "run", "--uri", self.emulator.uri, "--mappings", self.mappings,
                                     "--metrics-addr", "127.0.0.1:0"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.time() + 10
                while time.time() < deadline and proc.poll() is None and not started(proc.pid):
                    time.sleep(0.0002)
                time.sleep(rng.uniform(0, 0.005))
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=10)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            self.assertEqual(proc.returncode, 0, "attempt %d: %s" % (attempt, err[-2000:]))


class OperationTimeoutTest(unittest.TestCase):
    def test_backfill_verify_and_status_give_up_after_timeout(self):
        port = free_port()
        mappings = write_mappings("shop")
        for command in ("backfill", "verify", "status"):
            began = time.time()
            proc = subprocess.run([DENORMD, command, "--uri", "mongodb://127.0.0.1:%d/?replicaSet=rs0" % port,
                                   "--db", "shop", "--mappings", mappings, "--timeout", "3"],
                                  capture_output=True, text=True, timeout=60)
            took = time.time() - began
            self.assertEqual(proc.returncode, 1, "%s: %s" % (command, proc.stderr))
            self.assertIn("cannot reach MongoDB at mongodb://127.0.0.1:%d" % port, proc.stderr, command)
            self.assertIn("within 3 s (--timeout)", proc.stderr, command)
            self.assertGreater(took, 2.5, command)
            self.assertLess(took, 3 + 4, "%s took %.1f s" % (command, took))

    def test_timeout_is_validated(self):
        proc = subprocess.run([DENORMD, "status", "--timeout", "0"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn('--timeout must be a whole number of seconds from 1 to 86400, not "0"', proc.stderr)
        proc = subprocess.run([DENORMD, "run", "--timeout", "3"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--timeout is for backfill, verify, status and cost, not run", proc.stderr)


@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events and failCommand")
class ResyncAndResumeTest(ShopTestCase):
    EMULATOR_ARGS = {"test_resyncs_back_off_log_once_per_episode_and_converge_after_the_oplog_stops_rolling":
                     ("--oplog-max-events", "100")}

    def begin(self):
        self.shop = Shop(self.db, seed=21)
        self.shop.seed(customers=30, products=15, orders=80, hosts=2, logs=40, reviews=40)
        self.shop.fill_recent_arrays()
        self.d = self.start()

    def test_resyncs_back_off_log_once_per_episode_and_converge_after_the_oplog_stops_rolling(self):
        self.begin()
        sources = len(set(re.findall(r"source=(\S+)", self.d.log())))
        stop = threading.Event()

        def roll():  # far more changes than the server keeps, all the time
            while not stop.is_set():
                self.shop.random_change()
                self.db.noise.insert_many([{"n": i} for i in range(60)])

        writer = threading.Thread(target=roll)
        writer.start()
        try:
            time.sleep(20)
        finally:
            stop.set()
            writer.join()
        lost_while_rolling = self.d.log().count("change stream history lost")
        self.assertGreaterEqual(lost_while_rolling, 1)
        wait_until(self.shop.check, timeout=90, interval=0.5, message="converged once the oplog stopped rolling")
        wait_until(lambda: self.d.get("/readyz")[0] == 200, timeout=60, message="ready after the re-syncs")
        log = self.d.log()
        lost = log.count("change stream history lost")
        # One line when an episode begins and one when it ends, not one per re-sync: while
        # the oplog outruns the re-syncs, the waits between them grow (1, 2, 4, 8 s...), and
        # across episodes too, so a source has a few episodes in 20 s, not thousands.
        self.assertEqual(lost, log.count("re-sync caught up; streaming again"))
        self.assertLessEqual(lost, 4 * sources, "%d 'history lost' lines for %d sources" % (lost, sources))
        self.assertEqual(self.d.metric_sum("denormd_history_lost_total"), lost)
        self.assertEqual(self.d.stop(), 0)

    def test_the_drivers_own_resumes_after_dropped_connections_are_counted(self):
        self.begin()
        before = self.d.metric_sum("denormd_resumes_total", reason="error")
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 3},
                                   "data": {"failCommands": ["getMore"], "closeConnection": True,
                                            "appName": "denormd"}})
        wait_until(lambda: self.d.metric_sum("denormd_resumes_total", reason="error") - before >= 3,
                   timeout=15, message="three resumes after three dropped connections")
        self.shop.random_change()
        wait_until(self.shop.check, timeout=30, interval=0.25, message="converged after the resumes")
        self.assertEqual(self.d.stop(), 0)

@unittest.skipUnless(emulator_only(), "needs mongo-emulator --oplog-max-events")
class StopDuringBackfillTest(ShopTestCase):
    """SIGTERM while a backfill walks a big collection: a re-sync inside `run`, or `denormd backfill`."""
    EMULATOR_ARGS = {"test_sigterm_during_a_resync_backfill_exits_0_within_5s": ("--oplog-max-events", "1000")}
    CUSTOMERS = 8000

    def setUp(self):
        super().setUp()
        self.mappings = mapping_folder(copy_mapping(self.dbname, "orders-customer", "customers", "orders",
                                                    "customerId", {"name": "name"}, "customer"))
        # A big source: backfilling orders-customer walks every customer, 500 to a batch.
        for first in range(1, self.CUSTOMERS + 1, 10000):
            self.db.customers.insert_many([{"_id": i, "name": "Customer %d" % i}
                                           for i in range(first, min(first + 10000, self.CUSTOMERS + 1))])
        self.db.orders.create_index("customerId")
        self.db.orders.insert_many([{"_id": i, "customerId": i * 19 % self.CUSTOMERS + 1} for i in range(1, 2001)])

    def copies_missing(self):
        return self.db.orders.count_documents({"customer.name": {"$exists": False}})

    def slow_writes(self):
        """Every `update` of denormd's held 250 ms: a backfill batch (one `update` command of 500
        statements, and one more for its progress) takes that long at least, so there is always
        a batch in flight and more to come when the SIGTERM arrives, on any machine."""
        self.fail_point(failCommands=["update"], blockConnection=True, blockTimeMS=250, mode="alwaysOn")

    def fast_writes(self):
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})

    def test_sigterm_during_a_resync_backfill_exits_0_within_5s(self):
        d = self.start()
        self.assertEqual(d.stop(), 0)
        # More writes than the server keeps history for: the stored checkpoint falls off it.
        self.db.customers.update_one({"_id": 20}, {"$set": {"name": "renamed while stopped"}})
        self.db.noise.insert_many([{"n": i} for i in range(1500)])
        self.slow_writes()
        d = self.daemon(self.uri, mappings=self.mappings, ready=False)
        wait_until(lambda: "change stream history lost" in d.log(), timeout=20, message="the re-sync began")
        time.sleep(1)
        self.assertNotIn("re-sync caught up", d.log(), "the re-sync's backfill was too short to stop during it")
        code, _ = stop_within(d, 5)
        self.assertEqual(code, 0, d.log()[-4000:])
        self.assertNotIn("re-sync caught up", d.log())
        self.assertNotIn("stop deadline passed", d.log())
        self.assertGreater(self.copies_missing(), 0, "the backfill had finished")

        # The next start re-syncs again (the checkpoint is still before the lost history).
        self.fast_writes()
        d = self.daemon(self.uri, mappings=self.mappings, ready=False)
        wait_until(lambda: self.copies_missing() == 0, timeout=120, interval=0.5, message="the re-sync's copies")
        self.assertEqual(self.db.orders.find_one({"_id": 1})["customer"], {"name": "renamed while stopped"})
        wait_until(lambda: d.get("/readyz")[0] == 200, timeout=60, message="streaming after the re-sync")
        self.assertEqual(d.stop(), 0)

    def test_sigterm_during_denormd_backfill_stops_within_5s_and_a_rerun_continues(self):
        progress = lambda: self.db.denormd_backfill.find_one({"_id": "orders-customer"}) or {}
        self.slow_writes()
        proc = subprocess.Popen([DENORMD, "backfill", "--uri", self.uri, "--db", self.dbname,
                                 "--mappings", self.mappings], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            wait_until(lambda: progress().get("documents", 0) > 0, timeout=30, interval=0.05,
                       message="the backfill under way")
            began = time.time()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
            took = time.time() - began
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.outputs.append((["backfill", "(SIGTERM)"], proc.returncode, out, err))
        self.assertLess(took, 5, "SIGTERM took %.1f s" % took)
        # docs/running.md, "Backfill": exit 1 when stopped; the progress so far is stored.
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("orders-customer: ", out)
        self.assertIn(", stopped", out)
        self.assertIn("backfill stopped; run it again to continue where it stopped", err)
        stopped = progress()
        self.assertFalse(stopped["done"])
        self.assertLess(stopped["documents"], self.CUSTOMERS, "the backfill had finished")

        self.fast_writes()
        rc, out, err = self.cmd("backfill")
        self.assertEqual(rc, 0, err)
        self.assertIn("continued after _id %d" % stopped["lastKey"], out)
        self.assertEqual(self.copies_missing(), 0)



class NanSourceBackfillTest(ShopTestCase):
    """A backfilled source holding a NaN (the soak's customers carry a NaN sum once an order
    total is NaN): the backfill's re-read of a batch compared what it read with ==, by which a
    NaN is unequal to itself, so it read and rewrote that document for ever and a SIGTERM then
    waited for it without end."""

    def setUp(self):
        super().setUp()
        self.mappings = mapping_folder(copy_mapping(self.dbname, "orders-customer", "customers", "orders",
                                                    "customerId", {"name": "name", "total": "spent.total"},
                                                    "customer"))
        self.db.customers.insert_many([{"_id": i, "name": "Customer %d" % i, "spent": {"total": i}}
                                       for i in range(1, 21)])
        self.db.customers.update_one({"_id": 7}, {"$set": {"spent.total": float("nan")}})
        self.db.orders.insert_many([{"_id": i, "customerId": i % 20 + 1} for i in range(1, 41)])

    def test_the_automatic_backfill_of_a_nan_source_finishes_and_sigterm_exits_0_within_5s(self):
        d = self.start(auto_backfill=True)
        wait_until(lambda: "new and changed mappings are backfilled" in d.log(), timeout=20,
                   message="the automatic backfill done")
        copy = self.db.orders.find_one({"customerId": 7})["customer"]
        self.assertEqual(copy["name"], "Customer 7")
        self.assertTrue(math.isnan(copy["total"]), copy)
        code, _ = stop_within(d, 5)
        self.assertEqual(code, 0, d.log()[-4000:])
        self.assertNotIn("stop deadline passed", d.log())

    def test_denormd_backfill_of_a_nan_source_finishes(self):
        rc, out, err = self.cmd("backfill", timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.db.orders.count_documents({"customer.name": {"$exists": False}}), 0)


class StopDuringRecheckTest(ShopTestCase):
    """SIGTERM while a copy's backfill reads a batch's sources again: a source written more often
    than the re-read takes keeps that loop going, which did not look at the stop."""

    def setUp(self):
        super().setUp()
        self.mappings = mapping_folder(copy_mapping(self.dbname, "orders-customer", "customers", "orders",
                                                    "customerId", {"name": "name"}, "customer"))
        self.db.customers.insert_many([{"_id": i, "name": "Customer %d" % i} for i in range(1, 21)])
        self.db.orders.insert_many([{"_id": i, "customerId": i % 20 + 1} for i in range(1, 41)])
        self.writing = threading.Event()
        self.writer = None

    def tearDown(self):
        self.writing.clear()
        if self.writer:
            self.writer.join()
        super().tearDown()

    def write_customer_1(self):
        n = 0
        while self.writing.is_set():
            n += 1
            self.db.customers.update_one({"_id": 1}, {"$set": {"name": "hot %d" % n}})
            time.sleep(0.02)

    def test_sigterm_while_a_hot_source_is_rechecked_exits_0_within_5s_and_a_rerun_finishes(self):
        # Each of denormd's reads held 300 ms: customer 1 has always changed by the re-read.
        self.fail_point(failCommands=["find"], blockConnection=True, blockTimeMS=300, mode="alwaysOn")
        self.writing.set()
        self.writer = threading.Thread(target=self.write_customer_1)
        self.writer.start()
        d = self.start(auto_backfill=True)
        # Customer 1's copies are the stream's to write too; the others' only the backfill's.
        wait_until(lambda: self.db.orders.count_documents({"customerId": {"$ne": 1},
                                                           "customer.name": {"$exists": True}}) > 0,
                   timeout=20, message="the backfill's first batch written")
        time.sleep(1)  # rechecking it
        self.assertNotIn("new and changed mappings are backfilled", d.log())
        code, _ = stop_within(d, 5)
        self.assertEqual(code, 0, d.log()[-4000:])
        self.assertNotIn("stop deadline passed", d.log())
        # The unfinished batch is not on record: the next run writes it again.
        progress = self.db.denormd_backfill.find_one({"_id": "orders-customer"})
        self.assertFalse(progress["done"])
        self.assertEqual(progress["documents"], 0)

        self.writing.clear()
        self.writer.join()
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        d = self.start(auto_backfill=True)
        wait_until(lambda: "new and changed mappings are backfilled" in d.log(), timeout=20,
                   message="the automatic backfill done")
        name = self.db.customers.find_one({"_id": 1})["name"]
        wait_until(lambda: self.db.orders.count_documents({"customerId": 1, "customer.name": {"$ne": name}}) == 0,
                   timeout=20, message="customer 1's copies current")
        self.assertEqual(self.db.orders.count_documents({"customer.name": {"$exists": False}}), 0)
        self.assertEqual(d.stop(), 0)


@unittest.skipUnless(os.path.isdir("/dev/shm"), "the driver keeps its counters in /dev/shm")
@unittest.skipUnless(emulator_only(), "starts its own test server")
class DriverCountersTest(DaemonTestCase):
    """The driver names its counters /dev/shm/mongoc-<pid>; a killed process must not leave
    that name for a later process with the same pid to trip over (it then warned on stderr in
    the driver's own format, around --log-format)."""

    def setUp(self):
        super().setUp()
        self.emulator = Emulator()

    def test_a_stale_counter_file_with_our_pid_is_removed_quietly(self):
        # exec keeps the pid, so the file the shell makes is one a dead process left for us.
        script = 'touch /dev/shm/mongoc-$$ && exec "$@"'
        p = subprocess.run(["/bin/sh", "-c", script, "sh", DENORMD, "status", "--uri", self.emulator.uri,
                            "--db", self.dbname, "--mappings", self.mappings, "--log-format", "json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("counters", p.stderr)
        for line in p.stderr.splitlines():
            json.loads(line)  # every line in the chosen format

    def test_a_killed_daemon_leaves_no_counter_file(self):
        d = self.daemon(self.emulator.uri)
        name = "/dev/shm/mongoc-%d" % d.proc.pid
        self.assertFalse(os.path.exists(name), "%s exists while denormd runs" % name)
        d.kill9()
        self.assertFalse(os.path.exists(name))


if __name__ == "__main__":
    unittest.main()
