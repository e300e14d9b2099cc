#!/usr/bin/python3
"""Driver compatibility: pymongo 3.11 against mongo-emulator (or DENORMD_TEST_URI).

CRUD, indexes, aggregation, and change streams at every scope, including a resume after a
getMore whose connection the server closes (failCommand closeConnection) and one after a
resumable error: every event must arrive exactly once; a regex filter matches. Transactions:
pymongo_transactions.py.

Usage: pymongo_compat.py PATH_TO_MONGO_EMULATOR   (exit 77 = skipped)
"""
import datetime
import os
import re
import select
import signal
import subprocess
import sys
import time

try:
    import pymongo
    from bson import Timestamp
    from pymongo import ReturnDocument
    from pymongo.errors import DuplicateKeyError, OperationFailure
except ImportError:
    print("pymongo is not installed for", sys.executable)
    sys.exit(77)


def start_emulator(path, *args):
    proc = subprocess.Popen([path, "--port", "0", *args], stdout=subprocess.PIPE)
    ready, _, _ = select.select([proc.stdout], [], [], 10)
    line = proc.stdout.readline().decode() if ready else ""
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError("emulator did not start: %r" % line)
    host_port = line[len("listening on "):].strip()
    return proc, "mongodb://%s/?replicaSet=rs0" % host_port


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def read_events(stream, n, timeout=10.0):
    events = []
    deadline = time.monotonic() + timeout
    while len(events) < n and time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            events.append(change)
    return events


def fail_next(client, **data):
    client.admin.command("configureFailPoint", "failCommand", mode={"times": 1},
                         data=dict(failCommands=["getMore"], **data))


def crud(db):
    c = db.crud
    c.insert_one({"_id": 1, "a": 1, "tags": ["x"]})
    c.insert_many([{"_id": i, "a": i % 3} for i in range(2, 12)])
    check(c.find_one({"_id": 1})["tags"] == ["x"], "find_one")
    check(c.count_documents({"a": 1}) == 4, "count_documents")
    check(c.estimated_document_count() == 11, "estimated_document_count")
    r = c.update_many({"a": 1}, {"$inc": {"n": 1}, "$push": {"tags": "y"}})
    check(r.matched_count == 4 and r.modified_count == 4, "update_many %r" % r.raw_result)
    r = c.update_one({"_id": 100}, {"$set": {"a": 9}, "$setOnInsert": {"new": True}}, upsert=True)
    check(r.upserted_id == 100, "upsert")
    r = c.replace_one({"_id": 2}, {"replaced": True})
    check(r.modified_count == 1 and c.find_one({"_id": 2}) == {"_id": 2, "replaced": True},
          "replace_one")
    doc = c.find_one_and_update({"_id": 3}, {"$set": {"b": 1}},
                                return_document=ReturnDocument.AFTER)
    check(doc["b"] == 1, "find_one_and_update")
    ids = [d["_id"] for d in c.find({"a": {"$gte": 0}}, {"_id": 1}).sort("_id", -1).skip(1).limit(3)]
    check(ids == [11, 10, 9], "find sort/skip/limit %r" % ids)
    check(len(list(c.find(batch_size=2))) == 12, "batched find")
    groups = {g["_id"]: g["n"] for g in c.aggregate([{"$group": {"_id": "$a", "n": {"$sum": 1}}}])}
    check(groups.get(0) == 3, "aggregate %r" % groups)
    c.create_index("a")
    c.create_index([("u", pymongo.ASCENDING)], unique=True, sparse=True)
    check({"a_1", "u_1"} <= set(c.index_information()), "indexes")
    c.update_one({"_id": 4}, {"$set": {"u": 1}})
    try:
        c.update_one({"_id": 5}, {"$set": {"u": 1}})
        check(False, "unique index not enforced")
    except DuplicateKeyError as e:
        check("E11000 duplicate key error collection" in str(e), str(e))
    check(c.delete_many({"a": 2}).deleted_count == 3, "delete_many")
    check(c.delete_one({"_id": 1}).deleted_count == 1, "delete_one")
    check("crud" in db.list_collection_names(), "list_collection_names")
    c.drop()


def regexes(db):
    c = db.rx
    c.insert_many([{"_id": 1, "s": "apple"}, {"_id": 2, "s": "Avocado"}, {"_id": 3, "s": "pear"}])
    check(c.count_documents({"s": re.compile("^a")}) == 1, "regex literal")
    check(c.count_documents({"s": re.compile("^a", re.IGNORECASE)}) == 2, "regex flags")
    check(c.count_documents({"s": {"$regex": "^A", "$options": "i"}}) == 2, "$regex/$options")
    check(c.count_documents({"s": {"$in": [re.compile("^p"), "apple"]}}) == 2, "$in regex")
    try:
        list(c.find({"$where": "true"}))
        check(False, "$where accepted")
    except OperationFailure as e:
        check(e.code == 238, "$where refused with %r" % e.code)
    c.drop()


def streams(client, db):
    c = db.cs
    with c.watch(max_await_time_ms=100) as stream:
        c.insert_many([{"_id": i} for i in range(5)])
        first = read_events(stream, 5)
        check([e["documentKey"]["_id"] for e in first] == list(range(5)), "initial events")
        # The server closes the connection under a getMore: pymongo resumes transparently.
        fail_next(client, closeConnection=True)
        c.insert_many([{"_id": i} for i in range(5, 10)])
        second = read_events(stream, 5)
        # A resumable server error, labelled by the server after cursor checkout, is resumed.
        client.admin.command("configureFailPoint", "failGetMoreAfterCursorCheckout",
                             mode={"times": 1}, data={"errorCode": 6})
        c.insert_many([{"_id": i} for i in range(10, 15)])
        third = read_events(stream, 5)
        seen = [e["documentKey"]["_id"] for e in first + second + third]
        check(seen == list(range(15)), "every event exactly once: %r" % seen)
        check(read_events(stream, 1, timeout=0.5) == [], "no repeated event")
        token = stream.resume_token

    c.update_one({"_id": 0}, {"$set": {"x": 1}})
    with c.watch(resume_after=token, full_document="updateLookup",
                 max_await_time_ms=100) as resumed:
        events = read_events(resumed, 1)
        check(len(events) == 1 and events[0]["operationType"] == "update", "resume_after")
        check(events[0]["fullDocument"] == {"_id": 0, "x": 1}, "updateLookup")
        check(events[0]["updateDescription"]["updatedFields"] == {"x": 1}, "updateDescription")

    with db.watch(max_await_time_ms=100) as db_stream, \
            client.watch(max_await_time_ms=100) as cluster_stream:
        db.other.insert_one({"_id": "o"})
        for s in (db_stream, cluster_stream):
            e = read_events(s, 1)
            check(len(e) == 1 and e[0]["ns"] == {"db": db.name, "coll": "other"}, "scope %r" % e)

    with c.watch(max_await_time_ms=100) as stream:
        c.drop()
        types = [e["operationType"] for e in read_events(stream, 2)]
        check(types == ["drop", "invalidate"], "drop/invalidate %r" % types)

    try:
        c.watch([{"$frobnicate": {}}])
        check(False, "bad stage accepted")
    except OperationFailure as e:
        check(e.code == 40324, "unknown stage code %r" % e.code)


def oplog(client, db):
    """The oldest and newest oplog entries, read as db.getReplicationInfo() reads them."""
    db.oplog_probe.insert_one({"_id": "last"})
    log = client.local["oplog.rs"]
    first = next(log.find({}, {"ts": 1, "wall": 1}).sort("$natural", 1).limit(1))
    last = next(log.find().sort("$natural", -1).limit(1))
    check(isinstance(first["ts"], Timestamp) and isinstance(last["ts"], Timestamp), "oplog ts")
    check(first["ts"] <= last["ts"], "oplog order %r %r" % (first["ts"], last["ts"]))
    check(isinstance(first["wall"], datetime.datetime), "oplog wall %r" % first)
    check(last["op"] == "i" and last["ns"] == db.name + ".oplog_probe" and last["o"] == {"_id": "last"},
          "newest oplog entry %r" % last)


def main():
    proc = None
    uri = os.environ.get("DENORMD_TEST_URI")
    if not uri:
        if len(sys.argv) < 2:
            print(__doc__)
            return 2
        proc, uri = start_emulator(sys.argv[1])
    try:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000, socketTimeoutMS=10000)
        check(client.admin.command("ping")["ok"] == 1.0, "ping")
        db = client["pymongo_compat"]
        client.drop_database(db.name)
        crud(db)
        regexes(db)
        streams(client, db)
        oplog(client, db)
        client.drop_database(db.name)
        client.close()
        print("pymongo %s: OK" % pymongo.version)
        return 0
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                print("emulator exited with", code)
                sys.exit(1)


if __name__ == "__main__":
    sys.exit(main())
