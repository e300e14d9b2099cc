#pragma once
// MongoDB server error codes the emulator returns, their codeNames, and the error-label
// categories drivers act on (retryable writes, resumable change streams). Stateless.

#include <string>

namespace mongo_emulator {

namespace codes {
inline constexpr int internal_error = 1;
inline constexpr int bad_value = 2;
inline constexpr int no_such_key = 4;
inline constexpr int host_unreachable = 6;
inline constexpr int host_not_found = 7;
inline constexpr int failed_to_parse = 9;
inline constexpr int user_not_found = 11;
inline constexpr int unauthorized = 13;
inline constexpr int type_mismatch = 14;
inline constexpr int protocol_error = 17;
inline constexpr int authentication_failed = 18;
inline constexpr int illegal_operation = 20;
inline constexpr int lock_timeout = 24;
inline constexpr int namespace_not_found = 26;
inline constexpr int index_not_found = 27;
inline constexpr int path_not_viable = 28;
inline constexpr int role_not_found = 31;
inline constexpr int conflicting_update_operators = 40;
inline constexpr int cursor_not_found = 43;
inline constexpr int no_matching_document = 47;
inline constexpr int invalid_role_modification = 49;
inline constexpr int namespace_exists = 48;
inline constexpr int max_time_ms_expired = 50;
inline constexpr int invalid_id_field = 53;
inline constexpr int command_not_found = 59;
inline constexpr int immutable_field = 66;
inline constexpr int invalid_options = 72;
inline constexpr int invalid_namespace = 73;
inline constexpr int index_options_conflict = 85;
inline constexpr int index_key_specs_conflict = 86;
inline constexpr int network_timeout = 89;
inline constexpr int shutdown_in_progress = 91;
inline constexpr int unsatisfiable_write_concern = 100;
inline constexpr int write_conflict = 112;
inline constexpr int conflicting_operation_in_progress = 117;
inline constexpr int primary_stepped_down = 189;
inline constexpr int transaction_too_old = 225;
inline constexpr int not_implemented = 238;
inline constexpr int no_such_transaction = 251;
inline constexpr int transaction_committed = 256;
inline constexpr int invalid_resume_token = 260;
inline constexpr int exceeded_time_limit = 262;
inline constexpr int operation_not_supported_in_transaction = 263;
inline constexpr int change_stream_fatal_error = 280;
inline constexpr int change_stream_history_lost = 286;
inline constexpr int unsupported_op_query_command = 352;
inline constexpr int socket_exception = 9001;
inline constexpr int not_writable_primary = 10107;
inline constexpr int bson_object_too_large = 10334;
inline constexpr int duplicate_key = 11000;
inline constexpr int interrupted_at_shutdown = 11600;
inline constexpr int interrupted_due_to_repl_state_change = 11602;
inline constexpr int not_primary_no_secondary_ok = 13435;
inline constexpr int not_primary_or_secondary = 13436;
inline constexpr int location_40324_unrecognized_stage = 40324;
inline constexpr int location_40647_bad_resume_token = 40647;
inline constexpr int location_40674_multiple_resume_options = 40674;
inline constexpr int location_50865_start_after_and_resume_after = 50865;
inline constexpr int location_40571_missing_db = 40571;
inline constexpr int idl_failed_to_parse = 40414;
inline constexpr int idl_unknown_field = 40415;
}  // namespace codes

// MongoDB's codeName for a code ("Location40324" for the numbered assertion codes).
std::string code_name(int code);

// Codes for which MongoDB adds `RetryableWriteError` to a retryable write's error (its
// RetriableError category).
bool is_retryable_write_code(int code);

// Codes for which MongoDB 6.0 adds `ResumableChangeStreamError` to a change stream's aggregate or
// getMore error (ErrorLabelBuilder::isResumableChangeStreamError; not 43 CursorNotFound).
// ChangeStreamFatalError (280) and ChangeStreamHistoryLost (286): labelled
// NonResumableChangeStreamError on whatever command returns them.
bool is_non_resumable_change_stream_code(int code);
bool is_resumable_change_stream_code(int code);

// MongoDB's NotPrimaryError category (10107, 13435, 13436, 11602, 189): an unacknowledged
// write that fails with one closes its connection, so that the client notices.
bool is_not_primary_code(int code);

// Codes for which MongoDB 6.0 adds `TransientTransactionError` to the error of a statement in a
// transaction (ErrorLabelBuilder::isTransientTransactionError): WriteConflict, LockTimeout and
// NoSuchTransaction; TransactionTooOld and the retriable codes (a statement refused by a node
// that stepped down) too, except on commitTransaction/abortTransaction.
bool is_transient_transaction_code(int code, bool commit_or_abort);

}  // namespace mongo_emulator
