#pragma once
// Reads a folder of mapping files (*.json) into validated mappings. Strict: every unknown
// key, wrong type, missing key or inconsistent setting is an error naming the file, the JSON
// pointer and the reason, and all errors of a run are reported together. Stateless.

#include <filesystem>
#include <string>
#include <vector>

#include "common/expected.h"
#include "mapping/mapping.h"
#include "mapping/spec_reader.h"

namespace denormd::config {

using mapping::load_error;

using load_result = expected<std::vector<mapping::mapping>, std::vector<load_error>>;

// Limits that keep a careless or hostile mapping file from exhausting the stack or the CPU
// (docs/operations.md, "Known limits", documents them).
inline constexpr std::size_t max_name_length = 128;
// Objects and arrays in a whole file, the file's own object being level 1.
inline constexpr int max_file_depth = 100;
// (The depth of queries, mapping::max_query_depth, is checked where a kind reads them.)

// `default_db` fills a missing "db" in source and target. `path` is a folder (every *.json
// in it, in name order) or a single mapping file.
load_result load_mappings(const std::filesystem::path& path, const std::string& default_db);

// Loads exactly these files, with the cross-file checks.
load_result load_mapping_files(const std::vector<std::filesystem::path>& files,
                               const std::string& default_db);

// Parses one file's text (exposed for tests and fuzzing); cross-file checks are not applied.
load_result parse_mapping(const std::string& file, const std::string& text,
                          const std::string& default_db);

}  // namespace denormd::config
