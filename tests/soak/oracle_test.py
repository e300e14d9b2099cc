"""The soak oracle against hand-computed expectations, without a server:
/usr/bin/python3 -m unittest tests.soak.oracle_test"""
import datetime
import math
import unittest

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tests.soak import bsoncmp, oracle

COPY = {"name": "c", "kind": "copy", "source": {"collection": "s"},
        "target": {"collection": "t", "key": "sid", "where": {"status": {"$ne": "CLOSED"}}},
        "into": "x", "fields": {"n": "name", "city": "addr.city"}, "onSourceDelete": "unset"}
RECENT = {"name": "r", "kind": "recent", "source": {"collection": "s", "parentKey": "p", "filter": {"hidden": {"$ne": True}}},
          "target": {"collection": "t"}, "into": "recent", "fields": {"id": "_id", "at": "at"},
          "idField": "id", "sort": {"at": -1}, "limit": 2, "onSourceDelete": "pullAndRefill"}
AGG = {"name": "a", "kind": "aggregate", "source": {"collection": "s", "parentKey": "p"},
       "target": {"collection": "t"}, "into": "g",
       "fields": {"count": {"$count": {}}, "sum": {"$sum": "v"}, "avg": {"$avg": "v"},
                  "min": {"$min": "v"}, "max": {"$max": "v"}}}


def fields(ms):
    return sorted((m.id, m.field) for m in ms)


class CompareTest(unittest.TestCase):
    def test_numbers_of_one_value_are_one_key(self):
        for v in (1, Int64(1), 1.0, Decimal128("1"), Decimal128("1.000")):
            self.assertTrue(bsoncmp.equal(1, v), v)
            self.assertEqual(oracle.key_of(v), oracle.key_of(1))
        self.assertEqual(oracle.key_of(float("nan")), oracle.key_of(Decimal128("NaN")))
        self.assertTrue(bsoncmp.equal(float("nan"), float("nan")))
        self.assertLess(bsoncmp.compare(float("nan"), float("-inf")), 0)
        self.assertFalse(bsoncmp.equal(Decimal128("3.00000000000000000001"), 3.0))
        self.assertLess(bsoncmp.compare(3.0, Decimal128("3.00000000000000000001")), 0)

    def test_type_order(self):
        order = [None, 5, "a", {"a": 1}, [1], bsoncmp.ObjectId(), False, datetime.datetime(2024, 1, 1)]
        for a, b in zip(order, order[1:]):
            self.assertLess(bsoncmp.compare(a, b), 0, (a, b))
        self.assertLess(bsoncmp.compare("Z", "a"), 0)  # binary, not locale
        self.assertLess(bsoncmp.compare({"a": 1}, {"a": 1, "b": 0}), 0)

    def test_identical_is_type_strict(self):
        self.assertFalse(bsoncmp.identical(1, 1.0))
        self.assertFalse(bsoncmp.identical(1, Int64(1)))
        self.assertTrue(bsoncmp.identical(float("nan"), float("nan")))
        self.assertFalse(bsoncmp.identical({"a": 1, "b": 2}, {"b": 2, "a": 1}))

    def test_matching(self):
        self.assertTrue(bsoncmp.matches({}, {"status": {"$ne": "CLOSED"}}))
        self.assertFalse(bsoncmp.matches({"status": ["A", "CLOSED"]}, {"status": {"$ne": "CLOSED"}}))
        self.assertTrue(bsoncmp.matches({"score": Decimal128("2")}, {"score": {"$gte": 2}}))
        self.assertFalse(bsoncmp.matches({"score": "9"}, {"score": {"$gte": 2}}))  # type bracketing
        self.assertFalse(bsoncmp.matches({"score": float("nan")}, {"score": {"$gte": 2}}))
        self.assertTrue(bsoncmp.matches({"score": [1, 3]}, {"score": {"$gte": 2}}))
        self.assertTrue(bsoncmp.matches({"a": {"b": None}}, {"a.c": None}))


class CopyTest(unittest.TestCase):
    def test_whole_targets(self):
        s = [{"_id": 1, "name": "Ann", "addr": {"city": "Oslo"}}, {"_id": 2, "name": "Bo"}]
        t = [{"_id": 10, "sid": Int64(1), "x": {"n": "Ann", "city": "Oslo"}},          # in line
             {"_id": 11, "sid": 1.0, "x": {"n": "Old", "city": "Oslo"}},              # stale name
             {"_id": 12, "sid": Decimal128("2"), "x": {"n": "Bo", "city": "Rome"}},    # city must be unset
             {"_id": 13, "sid": 1, "status": "CLOSED", "x": {"n": "Old"}},            # outside where
             {"_id": 14, "sid": [1, 2], "x": {"n": "zzz"}},                           # no reference
             {"_id": 15, "sid": 3, "x": {"n": "Gone"}},                               # source deleted: unset
             {"_id": 16, "sid": None},
             {"_id": 17, "sid": {"$gt": 0}, "x": {"n": "q"}}]
        got = oracle.check_copy(COPY, s, t)
        self.assertEqual(fields(got), [(11, "x.n"), (12, "x.city"), (15, "x.n")])
        self.assertEqual(oracle.check_copy(dict(COPY, onSourceDelete="keep"), s, t), got[:2])
        self.assertEqual(got[0].expected, "'Ann'")

    def test_copied_value_keeps_its_type(self):
        s = [{"_id": 1, "name": 5}]
        self.assertEqual(len(oracle.check_copy(COPY, s, [{"_id": 1, "sid": 1, "x": {"n": 5.0}}])), 1)
        self.assertEqual(oracle.check_copy(COPY, [{"_id": 1, "name": float("nan")}], [{"_id": 1, "sid": 1, "x": {"n": float("nan")}}]), [])

    def test_array_and_source_key(self):
        m = {"name": "a", "kind": "copy", "source": {"collection": "s", "key": "code"},
             "target": {"collection": "t", "array": "items", "key": "pid"}, "into": "p", "fields": {"title": "title"}}
        s = [{"_id": 1, "code": "A", "title": "Lamp"}, {"_id": 2, "code": 7, "title": "Desk"}]
        t = [{"_id": 1, "items": [{"pid": "A", "p": {"title": "Lamp"}}, {"pid": Int64(7), "p": {"title": "Old"}},
                                  {"pid": 8, "p": {"title": "kept"}}, "junk", {"pid": 7.0}]}]
        self.assertEqual(fields(oracle.check_copy(m, s, t)), [(1, "items.1.p.title"), (1, "items.4.p.title")])


class RecentTest(unittest.TestCase):
    def test_first_limit_in_order_ties_by_id(self):
        s = [{"_id": 3, "p": 1, "at": 5}, {"_id": 1, "p": Int64(1), "at": 5}, {"_id": 2, "p": 1.0, "at": 9},
             {"_id": 4, "p": 1, "at": 99, "hidden": True}, {"_id": 5, "p": [1], "at": 100}, {"_id": 6, "p": 2}]
        want = [{"id": 2, "at": 9}, {"id": 1, "at": 5}]
        self.assertEqual(oracle.check_recent(RECENT, s, [{"_id": 1, "recent": want}]), [])
        bad = oracle.check_recent(RECENT, s, [{"_id": 1, "recent": want[::-1]}, {"_id": 2, "recent": [{"id": 6}]}, {"_id": 3}])
        self.assertEqual(fields(bad), [(1, "recent")])
        self.assertEqual(fields(oracle.check_recent(RECENT, s, [{"_id": 2, "recent": []}])), [(2, "recent")])

    def test_pull_checks_what_it_keeps(self):
        m = dict(RECENT, onSourceDelete="pull")
        s = [{"_id": 1, "p": 1, "at": 5}, {"_id": 2, "p": 1, "at": 9}, {"_id": 3, "p": 1, "at": 7}]
        ok = [{"_id": 1, "recent": [{"id": 2, "at": 9}, {"id": 1, "at": 5}]}]  # 3 was pushed out: allowed
        self.assertEqual(oracle.check_recent(m, s, ok), [])
        stale = [{"_id": 1, "recent": [{"id": 2, "at": 8}]}]
        gone = [{"_id": 1, "recent": [{"id": 9, "at": 8}]}]
        order = [{"_id": 1, "recent": [{"id": 1, "at": 5}, {"id": 2, "at": 9}]}]
        for p in (stale, gone, order):
            self.assertEqual(len(oracle.check_recent(m, s, p)), 1, p)


class AggregateTest(unittest.TestCase):
    def values(self, *vs):
        return oracle.expected_aggregate(AGG, [{"p": 1, "v": v} if v is not oracle.MISSING else {"p": 1} for v in vs])

    def test_group_rules(self):
        w = self.values(1, 2, "x", None, oracle.MISSING)
        self.assertEqual((w["count"], w["sum"], w["avg"], w["min"], w["max"]), (5, 3, 1.5, 1, "x"))
        self.assertIs(type(w["sum"]), int)
        self.assertIsInstance(self.values(2**31 - 1, 1)["sum"], Int64)
        self.assertIsInstance(self.values(1, Int64(1))["sum"], Int64)
        self.assertEqual(self.values(1, 2.5)["sum"], 3.5)
        self.assertEqual(self.values(1, Decimal128("0.1"))["sum"], Decimal128("1.1"))
        self.assertEqual(self.values(Int64(2**62), Int64(2**62))["sum"], float(2**63))
        self.assertIsNone(self.values("a", None)["avg"])
        self.assertIsNone(self.values(None)["min"])
        self.assertTrue(math.isnan(self.values(1, float("nan"))["sum"]))
        self.assertTrue(math.isnan(self.values(float("inf"), float("-inf"))["sum"]))
        # With a decimal the sum is decimal: +Infinity + -Infinity is NaN there too (no trap).
        self.assertTrue(self.values(Decimal128("1"), float("inf"), float("-inf"))["sum"].to_decimal().is_nan())
        self.assertTrue(self.values(Decimal128("Infinity"), Decimal128("-Infinity"))["avg"].to_decimal().is_nan())
        self.assertTrue(math.isnan(self.values(1, float("nan"))["min"]))   # NaN is the least number
        self.assertEqual(self.values(Decimal128("3.00000000000000000001"), 3.0)["max"], Decimal128("3.00000000000000000001"))
        none = oracle.expected_aggregate(AGG, [])
        self.assertEqual(none, {"count": 0, "sum": 0, "avg": oracle.MISSING, "min": oracle.MISSING, "max": oracle.MISSING})

    def test_whole_parents(self):
        s = [{"p": 1, "v": 2}, {"p": Decimal128("1"), "v": 4}, {"p": [1], "v": 100}]
        good = {"_id": 1, "g": {"count": 2, "sum": 6, "avg": 3.0, "min": 2, "max": 4.0}}
        self.assertEqual(oracle.check_aggregate(AGG, s, [good, {"_id": 2, "g": {"count": 0, "sum": 0}}]), [])
        bad = {"_id": 1, "g": {"count": 2, "sum": 6.0, "avg": 3.0, "max": 4}}
        self.assertEqual(fields(oracle.check_aggregate(AGG, s, [bad, {"_id": 2, "g": {"count": 0, "sum": 0, "avg": None}}])),
                         [(1, "g.min"), (1, "g.sum"), (2, "g.avg")])

    def test_incremental_by_value(self):
        m = dict(AGG, mode="incremental", fields={"count": {"$count": {}}, "sum": {"$sum": "v"}, "avg": {"$avg": "v"}})
        s = [{"p": 1, "v": 2}, {"p": 1, "v": 4}]
        p = {"_id": 1, "g": {"count": Int64(2), "sum": 6.0, "avg": Decimal128("3"), "_denormd": {"at": 1}}}
        self.assertEqual(oracle.check_aggregate(m, s, [p]), [])
        p["g"]["sum"] = 7
        self.assertEqual(fields(oracle.check_aggregate(m, s, [p])), [(1, "g.sum")])


if __name__ == "__main__":
    unittest.main()
