#pragma once
// Declarations of the mapping library's types, for headers that only name them (the kinds'
// headers, which mapping.h itself includes).

namespace denormd::mapping {

struct mapping;
struct change_event;
struct write_op;
struct delta_items;
struct index_need;
class spec_reader;
class spec_object;
class document_store;
class computed_expression;
enum class delete_policy;
enum class merge_rule;

// The document states a change stream's events must carry for a mapping: the document before
// each change (fullDocumentBeforeChange), and after it as of that change rather than as of the
// lookup (fullDocument: whenAvailable instead of updateLookup).
struct stream_images {
  bool before = false;
  bool after = false;
};

}  // namespace denormd::mapping
