#!/usr/bin/python3
"""Multi-document transactions through pymongo 3.11 (Debian's python3-pymongo) against
mongo-emulator (or DENORMD_TEST_URI): with_transaction across collections, abort, snapshot
isolation, write conflicts (112 with TransientTransactionError, retried by with_transaction),
MongoDB's session errors, non-transactional writes waiting for a transaction, and the change
events of a transaction (one clusterTime, lsid and txnNumber, ordered tokens, resume from the
middle of a transaction).

Usage: pymongo_transactions.py PATH_TO_MONGO_EMULATOR   (exit 77 = skipped)
"""
import os
import sys
import threading
import time
import unittest
import uuid

try:
    import pymongo
    from bson import Int64
    from pymongo.errors import OperationFailure
    from pymongo.read_concern import ReadConcern
except ImportError:
    print("pymongo is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pymongo_compat import read_events, start_emulator  # noqa: E402

EMULATOR = None
URI = None


def setUpModule():
    global EMULATOR, URI
    URI = os.environ.get("DENORMD_TEST_URI")
    if not URI:
        EMULATOR, URI = start_emulator(sys.argv[1] if len(sys.argv) > 1 else os.environ["EMULATOR"])


def tearDownModule():
    if EMULATOR is not None:
        EMULATOR.terminate()
        EMULATOR.wait(timeout=10)


class Transactions(unittest.TestCase):
    def setUp(self):
        self.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000,
                                          socketTimeoutMS=20000)
        self.other = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000)
        self.db = self.client["txn_" + self._testMethodName]
        self.client.drop_database(self.db.name)
        self.a = self.db.a
        self.b = self.db.b
        self.a.insert_one({"_id": 1, "n": 0})
        self.b.insert_one({"_id": 1, "n": 0})

    def tearDown(self):
        self.client.drop_database(self.db.name)
        self.client.close()
        self.other.close()

    def watch(self):
        return self.db.watch(max_await_time_ms=200)

    def marker(self):
        """A write after the transaction: events before it are all the transaction's."""
        self.db.marker.insert_one({})

    def events_until_marker(self, stream):
        out = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            change = stream.try_next()
            if change is None:
                continue
            if change["ns"]["coll"] == "marker":
                return out
            out.append(change)
        self.fail("no marker event; got %r" % out)

    def test_with_transaction_commits_across_collections(self):
        with self.watch() as stream:
            with self.client.start_session() as session:
                def work(s):
                    self.a.insert_one({"_id": 2, "n": 1}, session=s)
                    self.a.update_one({"_id": 1}, {"$inc": {"n": 5}}, session=s)
                    self.b.insert_one({"_id": 2, "n": 2}, session=s)
                    self.b.delete_one({"_id": 1}, session=s)
                session.with_transaction(work)
                lsid = session.session_id
            self.marker()
            events = self.events_until_marker(stream)
        self.assertEqual(sorted(d["_id"] for d in self.a.find()), [1, 2])
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 5)
        self.assertEqual([d["_id"] for d in self.b.find()], [2])

        self.assertEqual([(e["operationType"], e["ns"]["coll"]) for e in events],
                         [("insert", "a"), ("update", "a"), ("insert", "b"), ("delete", "b")])
        # One clusterTime for the whole transaction; lsid and txnNumber on every event.
        self.assertEqual(len({e["clusterTime"] for e in events}), 1)
        for e in events:
            self.assertEqual(e["lsid"]["id"], uuid.UUID(bytes=bytes(lsid["id"])))
            self.assertIn("uid", e["lsid"])
            self.assertIsInstance(e["txnNumber"], Int64)
        self.assertEqual(len({e["txnNumber"] for e in events}), 1)
        # Tokens differ and sort in event order (as strings, as MongoDB's do).
        tokens = [e["_id"]["_data"] for e in events]
        self.assertEqual(tokens, sorted(tokens))
        self.assertEqual(len(set(tokens)), len(tokens))

    def test_abort_leaves_nothing_and_no_event(self):
        with self.watch() as stream:
            with self.client.start_session() as session:
                session.start_transaction()
                self.a.insert_one({"_id": 2}, session=session)
                self.a.update_one({"_id": 1}, {"$set": {"n": 9}}, session=session)
                self.assertEqual(self.a.count_documents({}, session=session), 2)
                session.abort_transaction()
            self.marker()
            self.assertEqual(self.events_until_marker(stream), [])
        self.assertEqual(list(self.a.find()), [{"_id": 1, "n": 0}])

    def test_a_failing_block_aborts(self):
        with self.client.start_session() as session:
            with self.assertRaises(ZeroDivisionError):
                with session.start_transaction():
                    self.a.insert_one({"_id": 2}, session=session)
                    1 / 0
        self.assertEqual(self.a.count_documents({}), 1)

    def test_snapshot_isolation(self):
        self.a.insert_one({"_id": 3, "n": 0})
        with self.client.start_session() as session:
            session.start_transaction(read_concern=ReadConcern("snapshot"))
            # The first statement fixes the snapshot.
            self.assertEqual(self.a.find_one({"_id": 1}, session=session)["n"], 0)
            self.a.insert_one({"_id": 2, "n": 1}, session=session)
            # Others see nothing of it; the transaction sees its own write ...
            self.assertIsNone(self.other[self.db.name].a.find_one({"_id": 2}))
            self.assertEqual(self.a.find_one({"_id": 2}, session=session)["n"], 1)
            # ... but no change committed after its snapshot, in any collection.
            self.other[self.db.name].a.update_one({"_id": 3}, {"$set": {"n": 7}})
            self.other[self.db.name].b.update_one({"_id": 1}, {"$set": {"n": 7}})
            self.other[self.db.name].b.insert_one({"_id": 9})
            self.other[self.db.name].a.delete_one({"_id": 1})
            self.assertEqual(self.a.find_one({"_id": 3}, session=session)["n"], 0)
            self.assertEqual(self.a.find_one({"_id": 1}, session=session)["n"], 0)
            self.assertEqual(list(self.b.find({}, session=session)), [{"_id": 1, "n": 0}])
            self.assertEqual(
                list(self.a.aggregate([{"$group": {"_id": None, "s": {"$sum": "$n"}}}],
                                      session=session)),
                [{"_id": None, "s": 1}])
            session.commit_transaction()
        self.assertEqual(self.a.find_one({"_id": 2})["n"], 1)
        self.assertEqual(self.a.find_one({"_id": 3})["n"], 7)

    def test_write_conflict_between_transactions(self):
        with self.client.start_session() as s1, self.other.start_session() as s2:
            s1.start_transaction()
            s2.start_transaction()
            other_a = self.other[self.db.name].a
            self.a.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=s1)
            with self.assertRaises(OperationFailure) as failure:
                other_a.update_one({"_id": 1}, {"$inc": {"n": 10}}, session=s2)
            self.assertEqual(failure.exception.code, 112)
            self.assertTrue(failure.exception.has_error_label("TransientTransactionError"))
            # The conflict aborted the second transaction.
            with self.assertRaises(OperationFailure) as failure:
                other_a.insert_one({"_id": 5}, session=s2)
            self.assertEqual(failure.exception.code, 251)
            self.assertTrue(failure.exception.has_error_label("TransientTransactionError"))
            s2.abort_transaction()
            s1.commit_transaction()
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 1)
        self.assertIsNone(self.a.find_one({"_id": 5}))

    def test_kill_sessions_aborts_their_open_transactions_at_once(self):
        """killSessions from another client ends the named sessions' open transactions: a
        write that would wait for one goes through, and the killed one cannot commit."""
        left = self.client.start_session()
        left.start_transaction()
        self.a.update_one({"_id": 1}, {"$set": {"n": 1}}, session=left)
        untouched = self.client.start_session()
        untouched.start_transaction()
        self.b.update_one({"_id": 1}, {"$set": {"n": 1}}, session=untouched)
        self.other.admin.command({"killSessions": [left.session_id]})
        # Without the kill this would wait for the transaction (60 s): maxTimeMS makes it fail.
        self.other[self.db.name].command({"update": "a", "updates": [
            {"q": {"_id": 1}, "u": {"$set": {"n": 2}}}], "maxTimeMS": 5000})
        with self.assertRaises(OperationFailure) as failure:
            left.commit_transaction()
        self.assertEqual(failure.exception.code, 251)
        untouched.commit_transaction()  # another session's transaction goes on
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 2)
        self.assertEqual(self.b.find_one({"_id": 1})["n"], 1)
        with self.assertRaises(OperationFailure):
            self.other.admin.command({"killSessions": [{"id": "not a UUID"}]})
        # An empty list kills every session of the user: here, every session.
        untouched.start_transaction()
        self.b.update_one({"_id": 1}, {"$set": {"n": 3}}, session=untouched)
        self.other.admin.command({"killSessions": []})
        with self.assertRaises(OperationFailure) as failure:
            untouched.commit_transaction()
        self.assertEqual(failure.exception.code, 251)
        self.assertEqual(self.b.find_one({"_id": 1})["n"], 1)
        left.end_session()
        untouched.end_session()

    def test_a_transaction_left_open_is_aborted_after_its_lifetime(self):
        """A client killed inside a transaction leaves it open; MongoDB aborts it after
        transactionLifetimeLimitSeconds, and writes that conflicted with it then succeed."""
        if EMULATOR is None:
            self.skipTest("the lifetime limit is a server parameter of the test server here")
        proc, uri = start_emulator(sys.argv[1] if len(sys.argv) > 1 else os.environ["EMULATOR"],
                                   "--transaction-lifetime-limit-seconds", "1")
        try:
            left, other = pymongo.MongoClient(uri), pymongo.MongoClient(uri)
            left.t.a.insert_one({"_id": 1, "n": 0})
            abandoned = left.start_session()
            abandoned.start_transaction()
            left.t.a.update_one({"_id": 1}, {"$set": {"n": 1}}, session=abandoned)
            with other.start_session() as s:
                s.start_transaction()
                with self.assertRaises(OperationFailure) as failure:
                    other.t.a.update_one({"_id": 1}, {"$set": {"n": 2}}, session=s)
                self.assertEqual(failure.exception.code, 112)
            time.sleep(1.5)
            with other.start_session() as s:
                s.start_transaction()
                other.t.a.update_one({"_id": 1}, {"$set": {"n": 2}}, session=s)
                s.commit_transaction()
            self.assertEqual(other.t.a.find_one({"_id": 1})["n"], 2)
            # The abandoned transaction was aborted: it cannot commit any more.
            with self.assertRaises(OperationFailure) as failure:
                abandoned.commit_transaction()
            self.assertEqual(failure.exception.code, 251)
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    def test_a_transaction_past_its_lifetime_fails_its_next_statement_and_commit(self):
        """MongoDB's reaper aborts a transaction older than transactionLifetimeLimitSeconds
        whether or not another write waits for it: its own next statement, and its commit, then
        get NoSuchTransaction (251), and nothing of it lands."""
        if EMULATOR is None:
            self.skipTest("the lifetime limit is a server parameter of the test server here")
        proc, uri = start_emulator(sys.argv[1] if len(sys.argv) > 1 else os.environ["EMULATOR"],
                                   "--transaction-lifetime-limit-seconds", "1")
        try:
            client = pymongo.MongoClient(uri)
            client.t.a.insert_one({"_id": 1, "n": 0})
            for late in ("statement", "commit"):
                with client.start_session() as s:
                    s.start_transaction()
                    client.t.a.update_one({"_id": 1}, {"$set": {"n": 1}}, session=s)
                    time.sleep(1.5)
                    with self.assertRaises(OperationFailure) as failure:
                        if late == "statement":
                            client.t.a.update_one({"_id": 1}, {"$set": {"n": 2}}, session=s)
                        else:
                            s.commit_transaction()
                    self.assertEqual(failure.exception.code, 251, late)
                self.assertEqual(client.t.a.find_one({"_id": 1})["n"], 0, late)
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    def test_write_conflict_with_a_change_after_the_snapshot(self):
        with self.client.start_session() as session:
            session.start_transaction()
            self.a.find_one({"_id": 1}, session=session)
            self.other[self.db.name].a.update_one({"_id": 1}, {"$set": {"n": 3}})
            with self.assertRaises(OperationFailure) as failure:
                self.a.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)
            self.assertEqual(failure.exception.code, 112)
            self.assertTrue(failure.exception.has_error_label("TransientTransactionError"))
            with self.assertRaises(OperationFailure) as failure:
                session.commit_transaction()
            self.assertEqual(failure.exception.code, 251)
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 3)

    def test_with_transaction_retries_a_write_conflict(self):
        attempts = []

        def work(s):
            attempts.append(1)
            doc = self.a.find_one({"_id": 1}, session=s)
            if len(attempts) == 1:
                # Someone else changes the document after this attempt's snapshot.
                self.other[self.db.name].a.update_one({"_id": 1}, {"$inc": {"n": 100}})
            self.a.update_one({"_id": 1}, {"$set": {"n": doc["n"] + 1}}, session=s)
            self.b.insert_one({"_id": 2}, session=s)

        with self.client.start_session() as session:
            session.with_transaction(work)
        self.assertEqual(len(attempts), 2)
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 101)
        self.assertEqual(self.b.count_documents({"_id": 2}), 1)

    def test_write_outside_waits_for_the_transaction(self):
        with self.client.start_session() as session:
            session.start_transaction()
            self.a.update_one({"_id": 1}, {"$set": {"n": 1}}, session=session)
            done = threading.Event()

            def outside():
                self.other[self.db.name].a.update_one({"_id": 1}, {"$inc": {"n": 10}})
                done.set()
            thread = threading.Thread(target=outside)
            thread.start()
            # A write to another document goes through at once.
            self.other[self.db.name].a.insert_one({"_id": 7})
            self.assertFalse(done.wait(0.5), "the write did not wait for the transaction")
            with self.assertRaises(OperationFailure) as failure:
                self.other[self.db.name].command(
                    "update", "a", updates=[{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
                    maxTimeMS=200)
            self.assertEqual(failure.exception.code, 50)
            session.commit_transaction()
            self.assertTrue(done.wait(5), "the write did not go on after the commit")
            thread.join()
        self.assertEqual(self.a.find_one({"_id": 1})["n"], 11)

    def test_session_errors(self):
        with self.client.start_session() as session:
            session.start_transaction()
            self.a.insert_one({"_id": 2}, session=session)
            session.commit_transaction()
            # A retried commit succeeds (pymongo retries it on the server as well).
            session.commit_transaction()
            txn = session._server_session.transaction_id
            lsid = session.session_id
        admin = self.client.admin
        with self.assertRaises(OperationFailure) as failure:
            self.db.command("insert", "a", documents=[{"_id": 3}], lsid=lsid, txnNumber=txn,
                            autocommit=False)
        self.assertEqual(failure.exception.code, 256)  # TransactionCommitted
        with self.assertRaises(OperationFailure) as failure:
            self.db.command("insert", "a", documents=[{"_id": 3}], lsid=lsid,
                            txnNumber=Int64(txn + 5), autocommit=False)
        self.assertEqual(failure.exception.code, 251)
        self.assertTrue(failure.exception.has_error_label("TransientTransactionError"))
        with self.assertRaises(OperationFailure) as failure:
            admin.command("commitTransaction", lsid=lsid, txnNumber=Int64(txn + 5),
                          autocommit=False)
        self.assertEqual(failure.exception.code, 251)
        with self.assertRaises(OperationFailure) as failure:
            self.db.command("insert", "a", documents=[{"_id": 3}], lsid=lsid,
                            txnNumber=Int64(txn - 1), startTransaction=True, autocommit=False)
        self.assertEqual(failure.exception.code, 225)  # TransactionTooOld
        # count is not allowed in a transaction; an aborted one refuses its commit.
        n = Int64(txn + 1)
        self.db.command("insert", "a", documents=[{"_id": 4}], lsid=lsid, txnNumber=n,
                        startTransaction=True, autocommit=False)
        with self.assertRaises(OperationFailure) as failure:
            self.db.command("count", "a", lsid=lsid, txnNumber=n, autocommit=False)
        self.assertEqual(failure.exception.code, 263)
        admin.command("abortTransaction", lsid=lsid, txnNumber=n, autocommit=False)
        with self.assertRaises(OperationFailure) as failure:
            admin.command("commitTransaction", lsid=lsid, txnNumber=n, autocommit=False)
        self.assertEqual(failure.exception.code, 251)
        self.assertTrue(failure.exception.has_error_label("TransientTransactionError"))
        self.assertEqual(sorted(d["_id"] for d in self.a.find()), [1, 2])

    def test_a_write_error_aborts_the_transaction(self):
        with self.client.start_session() as session:
            session.start_transaction()
            self.a.insert_one({"_id": 2}, session=session)
            with self.assertRaises(pymongo.errors.BulkWriteError) as failure:
                self.a.insert_many([{"_id": 3}, {"_id": 1}, {"_id": 4}], ordered=False,
                                   session=session)
            # In a transaction an unordered batch also stops at its first error.
            self.assertEqual(failure.exception.details["nInserted"], 1)
            with self.assertRaises(OperationFailure) as failure:
                session.commit_transaction()
            self.assertEqual(failure.exception.code, 251)
        self.assertEqual([d["_id"] for d in self.a.find()], [1])

    def test_resume_from_the_middle_of_a_transaction(self):
        with self.watch() as stream:
            with self.client.start_session() as session:
                with session.start_transaction():
                    for i in range(2, 5):
                        self.a.insert_one({"_id": i}, session=session)
            self.marker()
            events = self.events_until_marker(stream)
        self.assertEqual([e["documentKey"]["_id"] for e in events], [2, 3, 4])
        with self.db.watch(resume_after=events[0]["_id"], max_await_time_ms=200) as resumed:
            rest = read_events(resumed, 3)
        self.assertEqual([e["documentKey"]["_id"] for e in rest[:2]], [3, 4])
        self.assertEqual([e["_id"] for e in rest[:2]], [e["_id"] for e in events[1:]])
        self.assertEqual(rest[2]["ns"]["coll"], "marker")
        with self.a.watch(start_after=events[1]["_id"], max_await_time_ms=200) as resumed:
            self.assertEqual([e["documentKey"]["_id"] for e in read_events(resumed, 1)], [4])


if __name__ == "__main__":
    # The first argument is the emulator's path, not unittest's.
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:], verbosity=2)
