#include "error_codes.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace mongo_emulator {

namespace {

constexpr std::array<std::pair<int, std::string_view>, 81> names{{
    {1, "InternalError"},
    {2, "BadValue"},
    {4, "NoSuchKey"},
    {6, "HostUnreachable"},
    {7, "HostNotFound"},
    {9, "FailedToParse"},
    {11, "UserNotFound"},
    {13, "Unauthorized"},
    {14, "TypeMismatch"},
    {15, "Overflow"},
    {16, "InvalidLength"},
    {17, "ProtocolError"},
    {18, "AuthenticationFailed"},
    {20, "IllegalOperation"},
    {22, "InvalidBSON"},
    {24, "LockTimeout"},
    {26, "NamespaceNotFound"},
    {27, "IndexNotFound"},
    {28, "PathNotViable"},
    {31, "RoleNotFound"},
    {34, "CannotBackfillArray"},
    {40, "ConflictingUpdateOperators"},
    {43, "CursorNotFound"},
    {47, "NoMatchingDocument"},
    {48, "NamespaceExists"},
    {49, "InvalidRoleModification"},
    {50, "MaxTimeMSExpired"},
    {52, "DollarPrefixedFieldName"},
    {53, "InvalidIdField"},
    {54, "NotSingleValueField"},
    {55, "InvalidDBRef"},
    {56, "EmptyFieldName"},
    {57, "DottedFieldName"},
    {59, "CommandNotFound"},
    {63, "StaleShardVersion"},
    {66, "ImmutableField"},
    {67, "CannotCreateIndex"},
    {72, "InvalidOptions"},
    {73, "InvalidNamespace"},
    {79, "UnknownReplWriteConcern"},
    {85, "IndexOptionsConflict"},
    {86, "IndexKeySpecsConflict"},
    {89, "NetworkTimeout"},
    {91, "ShutdownInProgress"},
    {96, "OperationFailed"},
    {100, "UnsatisfiableWriteConcern"},
    {112, "WriteConflict"},
    {115, "CommandNotSupported"},
    {117, "ConflictingOperationInProgress"},
    {133, "FailedToSatisfyReadPreference"},
    {134, "ReadConcernMajorityNotAvailableYet"},
    {150, "StaleEpoch"},
    {168, "InvalidPipelineOperator"},
    {189, "PrimarySteppedDown"},
    {234, "RetryChangeStream"},
    {225, "TransactionTooOld"},
    {238, "NotImplemented"},
    {241, "ConversionFailure"},
    {251, "NoSuchTransaction"},
    {256, "TransactionCommitted"},
    {260, "InvalidResumeToken"},
    {262, "ExceededTimeLimit"},
    {263, "OperationNotSupportedInTransaction"},
    {280, "ChangeStreamFatalError"},
    {286, "ChangeStreamHistoryLost"},
    {317, "ConnectionPoolExpired"},
    {352, "UnsupportedOpQueryCommand"},
    {9001, "SocketException"},
    {10107, "NotWritablePrimary"},
    {10334, "BSONObjectTooLarge"},
    {11000, "DuplicateKey"},
    {11600, "InterruptedAtShutdown"},
    {11602, "InterruptedDueToReplStateChange"},
    {13388, "StaleConfig"},
    {13435, "NotPrimaryNoSecondaryOk"},
    {13436, "NotPrimaryOrSecondary"},
    {17280, "KeyTooLong"},
    {40413, "IDLDuplicateField"},
    {40414, "IDLFailedToParse"},
    {40415, "IDLUnknownField"},
    {50915, "BackupCursorOpenConflictWithCheckpoint"},
}};

// MongoDB 6.0's RetriableError category (src/mongo/base/error_codes.yml): the codes its label
// builder (src/mongo/db/error_labels.cpp) treats as retryable.
constexpr std::array retriable_codes{6,    7,     89,    91,    134,   189,   262,  317,
                                     9001, 10107, 11600, 11602, 13435, 13436, 50915};

// ErrorLabelBuilder::isResumableChangeStreamError on 4.4+: RetriableError, NetworkError (6 7 89
// 317 9001, all retriable too), NeedRetargettingError (63 StaleShardVersion, 150 StaleEpoch,
// 13388 StaleConfig), RetryChangeStream and FailedToSatisfyReadPreference. Not CursorNotFound
// (43): the change streams specification lists it for drivers talking to servers older than
// 4.4, which do not label errors; a 4.4+ server never labels it.
constexpr std::array resumable_only_codes{63, 133, 150, 234, 13388};

template <class Array>
bool contains(const Array& a, int code) {
  return std::find(a.begin(), a.end(), code) != a.end();
}

}  // namespace

std::string code_name(int code) {
  for (const auto& [c, name] : names) {
    if (c == code) return std::string(name);
  }
  // MongoDB names numbered assertions "Location<code>".
  return "Location" + std::to_string(code);
}

bool is_retryable_write_code(int code) {
  return contains(retriable_codes, code);
}

bool is_resumable_change_stream_code(int code) {
  return contains(retriable_codes, code) || contains(resumable_only_codes, code);
}

bool is_transient_transaction_code(int code, bool commit_or_abort) {
  if (code == codes::write_conflict || code == codes::lock_timeout ||
      code == codes::no_such_transaction)
    return true;
  return !commit_or_abort && (code == codes::transaction_too_old || is_retryable_write_code(code));
}

bool is_not_primary_code(int code) {
  return code == codes::not_writable_primary || code == codes::not_primary_no_secondary_ok ||
         code == codes::not_primary_or_secondary ||
         code == codes::interrupted_due_to_repl_state_change || code == codes::primary_stepped_down;
}

bool is_non_resumable_change_stream_code(int code) {
  return code == codes::change_stream_fatal_error || code == codes::change_stream_history_lost;
}

}  // namespace mongo_emulator
