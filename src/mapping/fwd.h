#pragma once
// Declarations of the mapping library's types, for headers that only name them (the kinds'
// headers, which mapping.h itself includes).

namespace denormd::mapping {

struct mapping;
struct change_event;
struct write_op;
struct index_need;
class spec_reader;
class spec_object;
class document_store;
enum class delete_policy;
enum class merge_rule;

}  // namespace denormd::mapping
