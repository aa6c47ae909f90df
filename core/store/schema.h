#pragma once
// The store's schema: checks that a file is a run store this build can read, and migrates older
// schema versions (PRAGMA user_version) one function per version.
#include "store/sqlite_db.h"

namespace myelin::store::detail {

// "MYLN": PRAGMA application_id of every run store, so another program's SQLite file is refused
// instead of getting our tables added to it.
inline constexpr int64_t kApplicationId = 0x4D594C4E;

// Checks the file (an SQLite database; ours or empty; not a newer schema), switches it to WAL
// and migrates it to kSchemaVersion. Throws StoreError saying what was expected. The file is
// checked with check_integrity before the first write, or at once when check_first; returns
// whether it was.
bool open_schema(Database& db, bool check_first);
// The same checks for a connection that never writes: the file must be a run store of version
// kSchemaVersion (an older one would need migrating: StoreProblem::ReadOnly).
void open_schema_read_only(Database& db);
// PRAGMA quick_check: a damaged file throws StoreError (StoreProblem::Damaged).
void check_integrity(Database& db);
// Per-connection settings: foreign keys, synchronous = NORMAL.
void configure_connection(Database& db);

} // namespace myelin::store::detail
