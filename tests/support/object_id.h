#pragma once
// New ObjectIds for tests and the test server (an insert without _id gets one). denormd
// itself never makes ObjectIds: it copies the ones MongoDB made. Thread-safe.

#include "bson/value.h"

namespace denormd::test {

// A new ObjectId from libbson: time, a per-process random value and a counter.
bson::oid new_object_id();

}  // namespace denormd::test
