#pragma once
// The command handlers by name, registered per group (one .cc file per group).

#include <map>
#include <string>

#include "command.h"

namespace mongo_emulator {

using command_table = std::map<std::string, command_spec, std::less<>>;

void register_admin_commands(command_table& table);  // hello, ping, buildInfo, fail points, ...
void register_ddl_commands(command_table& table);    // create, drop, indexes, listCollections, ...
void register_write_commands(command_table& table);  // insert, update, delete, findAndModify
void register_read_commands(command_table& table);   // find, getMore, aggregate, count, ...
void register_replset_commands(command_table& table);     // replSetGetStatus, ...GetConfig, ...
void register_diagnostic_commands(command_table& table);  // getParameter, top, collStats, ...
// saslStart, saslContinue, logout, connectionStatus; wraps killSessions (register it last).
void register_auth_commands(command_table& table);
void register_user_commands(command_table& table);  // createUser, usersInfo, createRole, ...

}  // namespace mongo_emulator
