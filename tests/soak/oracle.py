"""What every target must hold, computed from the mapping files and the source collections alone
(docs/mappings.md: the kinds, "Reference values are data, never queries"), and the whole-target
comparison against what the targets hold. Shares no code with denormd; pure functions over
documents (lists of dicts as pymongo decodes them), so oracle_test.py checks it without a
server."""
import collections
import decimal
import math

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.regex import Regex
import re

from tests.soak.bsoncmp import (MISSING, compare, equal, get_path, identical, is_number, matches, num_kind,
                                to_decimal)

Mismatch = collections.namedtuple("Mismatch", "mapping id field expected got")


def show(v):
    return "<missing>" if v is MISSING else repr(v)


def is_reference(v):
    """Whether a key value references something (docs/mappings.md: null/missing reference nothing; arrays,
    documents with $-prefixed fields, regular expressions and undefined are not followed)."""
    if v is MISSING or v is None or isinstance(v, list):
        return False
    if isinstance(v, (Regex, re.Pattern)):
        return False
    if isinstance(v, dict) and _has_dollar_field(v):
        return False
    return True


def _has_dollar_field(d):
    for k, v in d.items():
        if k.startswith("$"):
            return True
        if isinstance(v, dict) and _has_dollar_field(v):
            return True
    return False


def _index(docs, path):
    """{canonical key: [docs]} for the docs whose value at `path` is a reference. Keys equal by
    BSON equality (1, Int64(1), 1.0, Decimal128("1"); NaN with NaN) share a bucket."""
    out = collections.defaultdict(list)
    for d in docs:
        v = get_path(d, path)
        if is_reference(v):
            out[key_of(v)].append(d)
    return out


def key_of(v):
    """A hashable stand-in for a value under BSON equality."""
    if is_number(v):
        x = to_decimal(v)
        if x.is_nan():
            return ("num", "nan")
        return ("num", x.normalize(decimal.Context(prec=200)) if x.is_finite() else str(x))
    if isinstance(v, dict):
        return ("doc", tuple((k, key_of(x)) for k, x in v.items()))
    if isinstance(v, list):
        return ("arr", tuple(key_of(x) for x in v))
    if v is None:
        return ("null",)
    return (type(v).__name__, v if not isinstance(v, bytes) else bytes(v))


def _into(m, name):
    return "%s.%s" % (m["into"], name) if m.get("into") else name


def check(mapping, collections_):
    """[Mismatch] between what `mapping` says its targets must hold and what they hold.
    `collections_`: {collection name: [documents]} of the mapping's source and target."""
    kind = mapping["kind"]
    src = collections_[mapping["source"]["collection"]]
    tgt = collections_[mapping["target"]["collection"]]
    if kind == "copy":
        return check_copy(mapping, src, tgt)
    if kind == "recent":
        return check_recent(mapping, src, tgt)
    if kind == "aggregate":
        return check_aggregate(mapping, src, tgt)
    raise ValueError("unknown kind %s" % kind)


# ---- copy ----

def check_copy(m, sources, targets):
    """docs/running.md, "Verify": copies equal the source's current values (absent where the source has none) in
    every target matching `where`, in every array element whose key matches; under
    onSourceDelete "keep" a target whose source does not exist keeps its copies (not checked);
    under "unset" it holds none. A target whose key is no reference is not checked ("verify
    expects nothing for them")."""
    out = []
    by_key = _index(sources, m["source"].get("key", "_id"))
    t = m["target"]
    policy = m.get("onSourceDelete", "keep")
    for doc in targets:
        if "where" in t and not matches(doc, t["where"]):
            continue
        if "array" in t:
            arr = get_path(doc, t["array"])
            if not isinstance(arr, list):
                continue
            for i, el in enumerate(arr):
                if isinstance(el, dict):
                    prefix = "%s.%d." % (t["array"], i)
                    out += _copy_one(m, by_key, policy, doc["_id"], el, prefix)
        else:
            out += _copy_one(m, by_key, policy, doc["_id"], doc, "")
    return out


def _copy_one(m, by_key, policy, tid, holder, prefix):
    k = get_path(holder, m["target"]["key"])
    if not is_reference(k):
        return []
    found = by_key.get(key_of(k), [])
    if len(found) > 1:
        return [Mismatch(m["name"], tid, prefix + m["target"]["key"], "one source", "%d sources share the key" % len(found))]
    out = []
    for name, path in m["fields"].items():
        field = _into(m, name)
        got = get_path(holder, field)
        if not found:
            if policy == "keep":
                continue
            want = MISSING
        else:
            want = get_path(found[0], path)
        if not _same_copy(want, got):
            out.append(Mismatch(m["name"], tid, prefix + field, show(want), show(got)))
    return out


def _same_copy(want, got):
    if want is MISSING or got is MISSING:
        return want is got
    return identical(want, got)


# ---- recent ----

def _children(m, children, parent_key_value):
    pk = m["source"]["parentKey"]
    flt = m["source"].get("filter")
    key = key_of(parent_key_value)
    return [c for c in children
            if is_reference(get_path(c, pk)) and key_of(get_path(c, pk)) == key and (not flt or matches(c, flt))]


def recent_element(m, child):
    return {name: v for name, v in ((n, get_path(child, p)) for n, p in m["fields"].items()) if v is not MISSING}


def recent_order(m, elements):
    """Elements in the mapping's order: `sort` (missing as null, BSON order), then the id
    ascending (docs/mappings.md: "the id breaks ties")."""
    import functools

    def cmp(a, b):
        for f, d in m["sort"].items():
            c = compare(a.get(f, None), b.get(f, None))
            if c:
                return c * (1 if d > 0 else -1)
        return compare(a.get(m["idField"], None), b.get(m["idField"], None))
    return sorted(elements, key=functools.cmp_to_key(cmp))


def _same_element(a, b):
    return isinstance(b, dict) and set(a) == set(b) and all(identical(a[k], b[k]) for k in a)


def check_recent(m, children, parents):
    """pullAndRefill: the array is the first `limit` matching children in the mapping's order
    (docs/running.md: "a recent array must equal the first limit children that match filter"; an empty
    array and no array are both "no children"). pull only removes a deleted child's element
    without refilling, so only what it keeps is guaranteed: each element is a current, matching
    child of this parent with its current values, in the mapping's order, at most `limit`, no
    child twice."""
    out = []
    into = m["into"]
    tkey = m["target"].get("key", "_id")
    refill = m.get("onSourceDelete", "pullAndRefill") == "pullAndRefill"
    for p in parents:
        k = get_path(p, tkey)
        got = get_path(p, into)
        if not is_reference(k):
            continue
        elems = recent_order(m, [recent_element(m, c) for c in _children(m, children, k)])
        if refill:
            want = elems[:m["limit"]]
            g = [] if got is MISSING else got
            if not isinstance(g, list) or len(g) != len(want) or not all(_same_element(a, b) for a, b in zip(want, g)):
                out.append(Mismatch(m["name"], p["_id"], into, show(want), show(got)))
            continue
        if got is MISSING:
            continue
        if not isinstance(got, list) or len(got) > m["limit"]:
            out.append(Mismatch(m["name"], p["_id"], into, "a list of at most %d" % m["limit"], show(got)))
            continue
        by_id = {key_of(e[m["idField"]]): e for e in elems if m["idField"] in e}
        seen = set()
        for i, g in enumerate(got):
            gid = g.get(m["idField"], MISSING) if isinstance(g, dict) else MISSING
            want = by_id.get(key_of(gid)) if gid is not MISSING else None
            if want is None or key_of(gid) in seen:
                out.append(Mismatch(m["name"], p["_id"], "%s.%d" % (into, i),
                                    "a current matching child of this parent, once", show(g)))
            elif not _same_element(want, g):
                out.append(Mismatch(m["name"], p["_id"], "%s.%d" % (into, i), show(want), show(g)))
            seen.add(key_of(gid))
        if not out or out[-1].id != p["_id"]:
            if [key_of(e.get(m["idField"])) for e in recent_order(m, [g for g in got if isinstance(g, dict)])] != \
                    [key_of(g.get(m["idField"])) for g in got if isinstance(g, dict)]:
                out.append(Mismatch(m["name"], p["_id"], into, "in the mapping's order", show(got)))
    return out


# ---- aggregate ----

# Decimal128 arithmetic: 34 digits, and no trap (+Infinity + -Infinity is NaN, as on MongoDB).
DECIMAL128 = decimal.Context(prec=34, traps=[])


def decimal_sum(nums):
    total = decimal.Decimal(0)
    for v in nums:
        total = DECIMAL128.add(total, to_decimal(v))
    return total


def group_sum(values):
    """$group's $sum over a parent's children: non-numbers ignored; int32 while it fits, then
    int64, double if any double (or int64 overflow), decimal if any decimal. Returns a pymongo
    value (int, Int64, float, Decimal128)."""
    nums = [v for v in values if is_number(v)]
    kinds = {num_kind(v) for v in nums}
    if "decimal" in kinds:
        return Decimal128(decimal_sum(nums))
    if "double" in kinds:
        total = 0.0
        for v in nums:
            total += float(v)
        return total
    total = sum(int(v) for v in nums)
    if "int64" not in kinds and -2**31 <= total < 2**31:
        return total
    if -2**63 <= total < 2**63:
        return Int64(total)
    return float(total)


def group_avg(values):
    """$avg: the mean of the numbers, null when there are none; a decimal if any decimal."""
    nums = [v for v in values if is_number(v)]
    if not nums:
        return None
    if any(num_kind(v) == "decimal" for v in nums):
        return Decimal128(DECIMAL128.divide(decimal_sum(nums), len(nums)))
    s = group_sum(nums)
    return float(s) / len(nums) if not isinstance(s, float) else s / len(nums)


def group_extreme(values, sign):
    """$min (sign -1) / $max (+1): BSON order, missing and null ignored; null when none."""
    best = MISSING
    for v in values:
        if v is MISSING or v is None:
            continue
        if best is MISSING or compare(v, best) * sign > 0:
            best = v
    return None if best is MISSING else best


def expected_aggregate(m, children):
    """{name: value or MISSING} a parent with these matching children holds."""
    out = {}
    for name, acc in m["fields"].items():
        (op, arg), = acc.items()
        vals = [get_path(c, arg) for c in children] if op != "$count" else []
        if op == "$count":
            out[name] = len(children)
        elif op == "$sum":
            out[name] = group_sum(vals)
        elif not children:
            out[name] = MISSING
        elif op == "$avg":
            out[name] = group_avg(vals)
        elif op == "$min":
            out[name] = group_extreme(vals, -1)
        elif op == "$max":
            out[name] = group_extreme(vals, 1)
    return out


def same_number(want, got, by_type):
    """Numbers equal by value (doubles within rounding of summation order); with `by_type`, of
    the same kind too (int32/int64/double/decimal)."""
    if want is None or got is None or want is MISSING or got is MISSING:
        return want is got or (want is None and got is None)
    if not (is_number(want) and is_number(got)):
        return equal(want, got) and type(want) is type(got)
    if by_type and num_kind(want) != num_kind(got):
        return False
    x, y = to_decimal(want), to_decimal(got)
    if x.is_nan() or y.is_nan():
        return x.is_nan() and y.is_nan()
    if x.is_infinite() or y.is_infinite():
        return x == y
    if x == y:
        return True
    inexact = "double" in (num_kind(want), num_kind(got)) or "decimal" in (num_kind(want), num_kind(got))
    return inexact and abs(x - y) <= decimal.Decimal("1e-9") * max(1, abs(x), abs(y))


# Known holes the oracle may be told to let pass (--tolerate), each printed by the run.
# Known holes the oracle can be told to let pass (--tolerate), by name: none open today.
TOLERATE = {}
tolerated = set()


def check_aggregate(m, children, parents):
    """docs/mappings.md "aggregate": $group's values per parent. recompute: sums and averages of the kind
    $group gives, $min/$max equal in BSON order. incremental: by value (a running sum keeps the
    widest type it has seen; verify compares by value), `<into>._denormd` ignored."""
    out = []
    tkey = m["target"].get("key", "_id")
    incremental = m.get("mode", "recompute") == "incremental"
    for p in parents:
        k = get_path(p, tkey)
        if not is_reference(k):
            continue
        want = expected_aggregate(m, _children(m, children, k))
        for name, w in want.items():
            field = _into(m, name)
            g = get_path(p, field)
            op = next(iter(m["fields"][name]))
            if op in ("$min", "$max"):
                ok = (w is MISSING and g is MISSING) or (w is not MISSING and g is not MISSING and
                                                        (w is None and g is None or
                                                         (w is not None and g is not None and equal(w, g))))
            elif op == "$count":
                ok = g is not MISSING and is_number(g) and same_number(w, g, False)
            else:
                ok = same_number(w, g, by_type=not incremental and op == "$sum")
                if ok and not incremental and op == "$avg" and is_number(w):
                    ok = (num_kind(w) == "decimal") == (num_kind(g) == "decimal")
            if not ok:
                out.append(Mismatch(m["name"], p["_id"], field, show(w), show(g)))
    return out


def check_all(mappings, read):
    """[Mismatch] of every mapping; `read(collection)` -> [documents]."""
    cache = {}
    out = []
    for m in mappings:
        cols = {}
        for part in ("source", "target"):
            c = m[part]["collection"]
            if c not in cache:
                cache[c] = read(c)
            cols[c] = cache[c]
        out += check(m, cols)
    return out
