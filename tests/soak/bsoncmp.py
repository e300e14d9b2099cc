"""MongoDB's value comparison and query matching, written for the soak oracle from MongoDB's
documented rules (BSON type order, numbers compared by value across int32/int64/double/decimal,
NaN equal to NaN and below every other number). It shares no code with denormd."""
import datetime
import decimal
import math

from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
import re

MISSING = object()  # a path that names nothing

_D = decimal.Context(prec=200, traps=[])


def is_number(v):
    return isinstance(v, (int, float, Decimal128)) and not isinstance(v, bool)


def num_kind(v):
    """'int32', 'int64', 'double' or 'decimal' of a number as pymongo decodes it."""
    if isinstance(v, Int64):
        return "int64"
    if isinstance(v, int):
        return "int32" if -2**31 <= v < 2**31 else "int64"
    if isinstance(v, float):
        return "double"
    return "decimal"


def to_decimal(v):
    """A number as an exact decimal.Decimal (NaN and the infinities included)."""
    if isinstance(v, Decimal128):
        return v.to_decimal()
    if isinstance(v, float):
        if math.isnan(v):
            return decimal.Decimal("NaN")
        return decimal.Decimal(v)  # exact binary value
    return decimal.Decimal(int(v))


def canonical_type(v):
    """MongoDB's canonical type order (bsontypes.h canonicalizeBSONType)."""
    if isinstance(v, MinKey):
        return -1
    if v is None or v is MISSING:
        return 5
    if is_number(v):
        return 10
    if isinstance(v, str):
        return 15
    if isinstance(v, dict):
        return 20
    if isinstance(v, list):
        return 25
    if isinstance(v, (bytes, Binary)):
        return 30
    if isinstance(v, ObjectId):
        return 35
    if isinstance(v, bool):
        return 40
    if isinstance(v, datetime.datetime):
        return 45
    if isinstance(v, Timestamp):
        return 47
    if isinstance(v, (Regex, re.Pattern)):
        return 50
    if isinstance(v, Code):
        return 60
    if isinstance(v, MaxKey):
        return 127
    raise TypeError("no BSON type for %r" % (v,))


def _cmp(a, b):
    return (a > b) - (a < b)


def compare_numbers(a, b):
    x, y = to_decimal(a), to_decimal(b)
    if x.is_nan() or y.is_nan():
        return _cmp(not x.is_nan(), not y.is_nan())  # NaN == NaN, NaN below every number
    return _cmp(x, y)


def compare(a, b):
    """<0, 0, >0 as MongoDB orders two BSON values (sort, $min/$max, equality)."""
    ta, tb = canonical_type(a), canonical_type(b)
    if ta != tb:
        return _cmp(ta, tb)
    if ta == 10:
        return compare_numbers(a, b)
    if ta in (5, -1, 127):
        return 0
    if ta == 15 or ta == 60:
        return _cmp(str(a).encode("utf-8"), str(b).encode("utf-8"))
    if ta == 20:
        return compare_lists(list(a.items()), list(b.items()), named=True)
    if ta == 25:
        return compare_lists([(str(i), v) for i, v in enumerate(a)], [(str(i), v) for i, v in enumerate(b)], named=True)
    if ta == 30:
        a, b = bytes(a), bytes(b)
        return _cmp((len(a), getattr(a, "subtype", 0), a), (len(b), getattr(b, "subtype", 0), b))
    if ta == 35:
        return _cmp(a.binary, b.binary)
    if ta == 40:
        return _cmp(bool(a), bool(b))
    if ta == 45:
        return _cmp(a, b)
    if ta == 47:
        return _cmp((a.time, a.inc), (b.time, b.inc))
    if ta == 50:
        return _cmp((a.pattern, str(a.flags)), (b.pattern, str(b.flags)))
    raise TypeError("cannot compare %r" % (a,))


def compare_lists(xs, ys, named):
    for (ka, va), (kb, vb) in zip(xs, ys):
        c = _cmp(canonical_type(va), canonical_type(vb))
        if c:
            return c
        c = _cmp(ka.encode("utf-8"), kb.encode("utf-8"))
        if c:
            return c
        c = compare(va, vb)
        if c:
            return c
    return _cmp(len(xs), len(ys))


def equal(a, b):
    return compare(a, b) == 0


def identical(a, b):
    """The same BSON value and type (what a copy must hold): numbers of one value but different
    types differ; NaN is identical to NaN of its type; documents compare in field order."""
    if is_number(a) or is_number(b):
        if not (is_number(a) and is_number(b)) or num_kind(a) != num_kind(b):
            return False
        return compare_numbers(a, b) == 0 and _sign(a) == _sign(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a.keys()) == list(b.keys()) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if type(a) is not type(b) and not (isinstance(a, (bytes, Binary)) and isinstance(b, (bytes, Binary))):
        return False
    return compare(a, b) == 0 if canonical_type(a) != 50 else a == b


def _sign(v):
    d = to_decimal(v)
    return None if d.is_nan() else d.is_signed() and d == 0


def get_path(doc, path):
    """The value at a dotted path through sub-documents, or MISSING (no array traversal: the
    soak's mapped paths never cross an array)."""
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return MISSING
    return cur


def path_candidates(doc, path):
    """Every value a query on `path` looks at (MongoDB traverses arrays on the way, and a
    leaf array offers itself and each element)."""
    out = []

    def walk(cur, parts):
        if not parts:
            out.append(cur)
            if isinstance(cur, list):
                out.extend(cur)
            return
        if isinstance(cur, dict):
            walk(cur.get(parts[0], MISSING), parts[1:])
        elif isinstance(cur, list):
            if parts[0].isdigit() and int(parts[0]) < len(cur):
                walk(cur[int(parts[0])], parts[1:])
            for e in cur:
                if isinstance(e, dict):
                    walk(e.get(parts[0], MISSING), parts[1:])
        else:
            out.append(MISSING)

    walk(doc, path.split("."))
    return out or [MISSING]


def _eq_candidate(c, v):
    if v is None:
        return c is None or c is MISSING
    if c is MISSING:
        return False
    return canonical_type(c) == canonical_type(v) and compare(c, v) == 0


def _cmp_candidate(c, v, op):
    if c is MISSING:
        c = None if v is None else MISSING
        if c is MISSING:
            return False
    if canonical_type(c) != canonical_type(v):
        return False  # type bracketing
    r = compare(c, v)
    if is_number(c) and (to_decimal(c).is_nan() or to_decimal(v).is_nan()):
        # NaN matches only $eq/$gte/$lte NaN
        both = to_decimal(c).is_nan() and to_decimal(v).is_nan()
        return both and op in ("$gte", "$lte")
    return {"$gt": r > 0, "$gte": r >= 0, "$lt": r < 0, "$lte": r <= 0}[op]


def _field_matches(doc, path, cond):
    cands = path_candidates(doc, path)
    if isinstance(cond, dict) and cond and all(k.startswith("$") for k in cond):
        for op, v in cond.items():
            if op == "$eq":
                ok = any(_eq_candidate(c, v) for c in cands)
            elif op == "$ne":
                ok = not any(_eq_candidate(c, v) for c in cands)
            elif op in ("$gt", "$gte", "$lt", "$lte"):
                ok = any(_cmp_candidate(c, v, op) for c in cands)
            elif op == "$in":
                ok = any(_eq_candidate(c, x) for c in cands for x in v)
            elif op == "$nin":
                ok = not any(_eq_candidate(c, x) for c in cands for x in v)
            elif op == "$exists":
                ok = (get_path_any(doc, path) is not MISSING) == bool(v)
            elif op == "$not":
                ok = not _field_matches(doc, path, v)
            else:
                raise ValueError("unsupported operator %s" % op)
            if not ok:
                return False
        return True
    return any(_eq_candidate(c, cond) for c in cands)


def get_path_any(doc, path):
    for c in path_candidates(doc, path):
        if c is not MISSING:
            return c
    return MISSING


def matches(doc, query):
    """Whether `doc` matches a query of the mapping language ($eq $ne $gt $gte $lt $lte $in $nin
    $exists $and $or $not, equality)."""
    for k, v in (query or {}).items():
        if k == "$and":
            if not all(matches(doc, q) for q in v):
                return False
        elif k == "$or":
            if not any(matches(doc, q) for q in v):
                return False
        elif not _field_matches(doc, k, v):
            return False
    return True
