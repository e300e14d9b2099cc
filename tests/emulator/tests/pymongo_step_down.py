#!/usr/bin/python3
"""replSetStepDown through pymongo 3.11 against mongo-emulator: hello reports the secondary
during the window, pymongo's automatic retry of a retryable write (10107 with
RetryableWriteError) succeeds once the node is primary again, a change stream keeps going
across the window with its history intact, and with_transaction retries a transaction the
step-down aborted. Each test starts its own server: the window affects all of its clients.

Usage: pymongo_step_down.py PATH_TO_MONGO_EMULATOR   (exit 77 = skipped)
"""
import os
import sys
import threading
import time
import unittest

try:
    import pymongo
except ImportError:
    print("pymongo is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pymongo_compat import start_emulator  # noqa: E402

EMULATOR_PATH = None
WINDOW_S = 2


class StepDown(unittest.TestCase):
    def setUp(self):
        if os.environ.get("DENORMD_TEST_URI"):
            self.skipTest("needs a server of its own")
        self.proc, self.uri = start_emulator(EMULATOR_PATH)
        self.client = pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=15000)
        self.db = self.client.sd

    def tearDown(self):
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()

    def step_down(self, secs=WINDOW_S):
        self.assertEqual(self.client.admin.command({"replSetStepDown": secs, "force": True})["ok"], 1.0)
        return time.time()

    def test_hello_reports_the_window(self):
        self.db.c.insert_one({"_id": 1})
        direct = pymongo.MongoClient(self.uri.split("?")[0] + "?directConnection=true")
        self.step_down()
        hello = direct.admin.command("hello")
        self.assertFalse(hello["isWritablePrimary"])
        self.assertTrue(hello["secondary"])
        self.assertEqual(hello["setName"], "rs0")
        self.assertNotIn("primary", hello)
        # pymongo 3.11 raises NotMasterError (not an OperationFailure) for 10107.
        with self.assertRaises(pymongo.errors.NotMasterError) as e:
            direct.admin.command({"replSetStepDown": 60, "force": True})
        self.assertEqual(e.exception.details["code"], 10107)
        # A direct connection reads with primaryPreferred, which a secondary serves.
        self.assertEqual(direct.sd.c.count_documents({}), 1)
        deadline = time.time() + WINDOW_S + 5
        while not direct.admin.command("hello")["isWritablePrimary"]:
            self.assertLess(time.time(), deadline, "never primary again")
            time.sleep(0.1)
        direct.close()

    def test_a_retryable_write_is_retried_after_the_window(self):
        self.db.c.insert_one({"_id": 1, "n": 0})
        began = self.step_down()
        # The first attempt gets 10107 + RetryableWriteError; pymongo selects a primary again
        # (waiting out the window) and retries once.
        self.db.c.update_one({"_id": 1}, {"$inc": {"n": 1}})
        self.assertGreaterEqual(time.time() - began, WINDOW_S - 0.2)
        self.db.c.insert_one({"_id": 2})
        self.assertEqual(self.db.c.find_one({"_id": 1})["n"], 1)  # applied once
        self.assertEqual(self.db.c.count_documents({}), 2)

    def test_a_write_without_retry_fails_with_not_writable_primary(self):
        client = pymongo.MongoClient(self.uri, retryWrites=False, serverSelectionTimeoutMS=15000)
        client.sd.c.insert_one({"_id": 1})
        self.step_down()
        with self.assertRaises(pymongo.errors.NotMasterError) as e:
            client.sd.c.insert_one({"_id": 2})
        self.assertEqual(e.exception.details["code"], 10107)
        self.assertEqual(e.exception.details["errmsg"], "not master")  # pymongo 3.11 says isMaster
        self.assertNotIn("errorLabels", e.exception.details)
        client.close()

    def test_a_change_stream_rides_through_with_its_history(self):
        self.db.c.insert_one({"_id": 0})
        with self.db.c.watch() as stream:
            self.db.c.insert_one({"_id": 1})
            first = stream.next()
            token = stream.resume_token
            self.step_down()
            self.db.c.insert_one({"_id": 2})  # retried after the window
            self.assertEqual(stream.next()["documentKey"], {"_id": 2})
        self.assertEqual(first["documentKey"], {"_id": 1})
        # The history is intact: resuming from a token of before the window replays the rest.
        with self.db.c.watch(resume_after=token) as again:
            self.assertEqual(again.next()["documentKey"], {"_id": 2})

    def test_with_transaction_retries_a_transaction_the_step_down_aborted(self):
        self.db.a.insert_one({"_id": 1, "n": 0})
        self.db.b.insert_one({"_id": 1, "n": 0})
        attempts = []
        stepped = threading.Event()

        def body(session):
            attempts.append(1)
            self.db.a.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)
            if not stepped.is_set():
                stepped.set()
                self.step_down()  # aborts this transaction; its commit is refused, then 251
            self.db.b.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)

        with self.client.start_session() as s:
            s.with_transaction(body)
        self.assertGreaterEqual(len(attempts), 2)
        self.assertEqual(self.db.a.find_one({"_id": 1})["n"], 1)
        self.assertEqual(self.db.b.find_one({"_id": 1})["n"], 1)


if __name__ == "__main__":
    EMULATOR_PATH = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EMULATOR")
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
