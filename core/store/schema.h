#pragma once
// The store's schema: checks that a file is a run store this build can read, and migrates older
// schema versions (PRAGMA user_version) one function per version.
#include "store/sqlite_db.h"

namespace myelin::store::detail {

// "MYLN": PRAGMA application_id of every run store, so another program's SQLite file is refused
// instead of getting our tables added to it.
inline constexpr int64_t kApplicationId = 0x4D594C4E;

// Checks the file (an SQLite database; ours or empty; not a newer schema), switches it to WAL
// and migrates it to kSchemaVersion. Throws StoreError saying what was expected.
void open_schema(Database& db);
// Per-connection settings: foreign keys, synchronous = NORMAL.
void configure_connection(Database& db);

} // namespace myelin::store::detail
