#pragma once
// Keeps MongoDB credentials out of everything denormd prints: connection strings, libmongoc's
// log lines and its error messages (which may quote a URI, a password or an option value).
//
// The functions are pure and thread-safe. The registry (remember_uri_secrets,
// redact_known_*) is process-wide, filled when a connection is opened and never emptied; it
// is guarded by a mutex, so every function here may be called from any thread.

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace denormd::mongo {

// The URI for logs and messages: the password and every option value that can hold a secret
// become "****". Only what is known to be safe is kept: the scheme, user name, hosts,
// database and the values of known, non-secret options; authMechanismProperties keeps its
// property names, not their values; an option denormd does not know keeps its name (unless
// it may be part of a secret before it) but not its value. A malformed URI is redacted the
// same way, assuming the worst: everything up to its last '@' may be credentials. Anything
// that is not a mongodb:// or mongodb+srv:// URI at all is not printed.
std::string redact_uri(std::string_view uri);

// The secret parts of `uri` (password, secret option values), as written and
// percent-decoded: the strings that must never be printed.
std::vector<std::string> uri_secrets(std::string_view uri);

// `text` with every embedded mongodb:// URI redacted and every occurrence of `secrets`
// replaced by "****". For messages that are not about the URI itself (network errors,
// server replies, the driver's log lines).
std::string redact_text(std::string_view text, std::span<const std::string> secrets);

// The option names of `uri` that redact_uri shows (lower case, decoded): the ones a message
// about the URI may quote.
std::vector<std::string> uri_shown_option_names(std::string_view uri);

// The strict form for messages about a URI (the driver's parse errors and warnings): also
// every quoted value ("..." or '...') that is not a known option name or one of
// `shown_names` becomes "****", since such messages quote user names, passwords, option
// values and fragments of them.
std::string redact_uri_message(std::string_view text, std::span<const std::string> secrets,
                               std::span<const std::string> shown_names = {});

// Adds the secrets and shown option names of `uri` to the process-wide registry.
void remember_uri_secrets(std::string_view uri);
// redact_text / redact_uri_message with what the registry holds.
std::string redact_known_secrets(std::string_view text);
std::string redact_known_uri_message(std::string_view text);

}  // namespace denormd::mongo
