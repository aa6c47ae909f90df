#include "store/sqlite_db.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>

namespace myelin::store::detail {

namespace {
// What SQLite's result code means for the person who opened the store.
std::string explain(int rc, const char* sqlite_message, std::chrono::milliseconds busy_timeout) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return "the store is locked by another connection or process (waited " +
               std::to_string(busy_timeout.count()) +
               " ms, the busy timeout); close the program holding it (another training, an "
               "SQLite browser) or wait until it is done, then try again";
    case SQLITE_NOTADB:
        return "not an SQLite database (expected a Myelin run store); choose another store file";
    case SQLITE_CORRUPT:
        return "the database is damaged (" + std::string(sqlite_message) +
               "); restore it from a backup, save what is readable with `sqlite3 FILE "
               ".recover`, or choose another store";
    case SQLITE_READONLY:
        return "the file is read-only (" + std::string(sqlite_message) +
               "); make the file and its folder writable, or choose another store";
    case SQLITE_FULL:
        return "the disk is full";
    case SQLITE_CANTOPEN:
        return "cannot open the file (" + std::string(sqlite_message) +
               "; the file and its folder must be readable and writable)";
    default:
        return sqlite_message;
    }
}
StoreProblem problem_of(int rc) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return StoreProblem::Locked;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return StoreProblem::Damaged;
    case SQLITE_READONLY:
        return StoreProblem::ReadOnly;
    default:
        return StoreProblem::None;
    }
}

// A file: URI for sqlite3_open_v2 (RFC 3986: '%', '?' and '#' would end or change the path).
std::string file_uri(const std::filesystem::path& path, std::string_view query) {
    std::string uri = "file:";
    for (const char c : path.string()) {
        if (c == '%' || c == '?' || c == '#') {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
            uri += escaped;
        } else {
            uri += c;
        }
    }
    return uri + "?" + std::string(query);
}
} // namespace

// ---- Statement ------------------------------------------------------------------------------

Statement& Statement::bind(int index, int64_t value) {
    int rc = sqlite3_bind_int64(stmt_, index, value);
    if (rc != SQLITE_OK) db_->fail(rc, "binding a statement parameter");
    return *this;
}

Statement& Statement::bind(int index, double value) {
    int rc = std::isnan(value) ? sqlite3_bind_null(stmt_, index)
                               : sqlite3_bind_double(stmt_, index, value);
    if (rc != SQLITE_OK) db_->fail(rc, "binding a statement parameter");
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
    // SQLITE_TRANSIENT: SQLite copies the text, so callers may pass temporaries. An empty view
    // may have a null data(), which SQLite would bind as NULL.
    int rc = sqlite3_bind_text64(stmt_, index, text.data() ? text.data() : "", text.size(),
                                 SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) db_->fail(rc, "binding a statement parameter");
    return *this;
}

Statement& Statement::bind_blob(int index, std::span<const std::byte> bytes) {
    int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) db_->fail(rc, "binding a statement parameter");
    return *this;
}

Statement& Statement::bind_null(int index) {
    int rc = sqlite3_bind_null(stmt_, index);
    if (rc != SQLITE_OK) db_->fail(rc, "binding a statement parameter");
    return *this;
}

bool Statement::step(std::string_view doing) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    // Take the message before reset() can replace it; reset releases the statement's locks.
    int code = sqlite3_extended_errcode(db_->handle());
    std::string sqlite_message = sqlite3_errmsg(db_->handle());
    sqlite3_reset(stmt_);
    db_->fail(code, doing, sqlite_message.c_str());
}

void Statement::run(std::string_view doing) {
    while (step(doing)) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::int64(int column) const {
    return sqlite3_column_int64(stmt_, column);
}

double Statement::real(int column) const {
    if (is_null(column)) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(stmt_, column);
}

std::string Statement::text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    if (!p) return {};
    return std::string(p, size_t(sqlite3_column_bytes(stmt_, column)));
}

std::span<const std::byte> Statement::blob(int column) const {
    const auto* p = static_cast<const std::byte*>(sqlite3_column_blob(stmt_, column));
    return {p, size_t(sqlite3_column_bytes(stmt_, column))};
}

// ---- Database -------------------------------------------------------------------------------

Database::Database(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout,
                   OpenMode mode)
    : path_(path), busy_timeout_(busy_timeout) {
    // NOMUTEX: each connection is used by one thread at a time (the store's own locks).
    int rc = SQLITE_OK;
    switch (mode) {
    case OpenMode::ReadWriteCreate:
        rc = sqlite3_open_v2(path.c_str(), &db_,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
        break;
    case OpenMode::ReadOnly:
        rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                             nullptr);
        break;
    case OpenMode::Immutable:
        rc = sqlite3_open_v2(file_uri(path, "mode=ro&immutable=1").c_str(), &db_,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
        break;
    }
    if (rc != SQLITE_OK) {
        std::string text = message("opening: " + explain(rc, sqlite3_errstr(rc), busy_timeout_));
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError(text, problem_of(rc));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, int(busy_timeout.count()));
}

Database::~Database() {
    for (auto& [sql, stmt] : idle_)
        sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
}

void Database::release(sqlite3_stmt* stmt) noexcept {
    if (!stmt) return;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    try {
        if (idle_.size() < kMaxCachedStatements && idle_.emplace(sqlite3_sql(stmt), stmt).second)
            return;
    } catch (...) { // out of memory: finalize instead
    }
    sqlite3_finalize(stmt);
}

std::string Database::message(std::string_view what) const {
    return "run store '" + path_.string() + "': " + std::string(what);
}

void Database::fail(int rc, std::string_view doing, const char* sqlite_message) const {
    if (!sqlite_message) sqlite_message = sqlite3_errmsg(db_);
    std::string text =
        message(std::string(doing) + ": " + explain(rc, sqlite_message, busy_timeout_));
    const StoreProblem problem = problem_of(rc);
    if (problem == StoreProblem::Locked) throw BusyError(text, problem);
    if ((rc & 0xff) == SQLITE_FULL) throw DiskFullError(text);
    throw StoreError(text, problem);
}

void Database::exec(const char* sql, std::string_view doing) {
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(sqlite3_extended_errcode(db_), doing);
}

Statement::~Statement() {
    db_->release(stmt_);
}

Statement Database::prepare(std::string_view sql) {
    if (auto it = idle_.find(std::string(sql)); it != idle_.end()) {
        sqlite3_stmt* cached = it->second;
        idle_.erase(it);
        return Statement(*this, cached);
    }
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt,
                                nullptr);
    if (rc != SQLITE_OK) fail(rc, "preparing '" + std::string(sql) + "'");
    return Statement(*this, stmt);
}

int64_t Database::query_int(const char* sql, std::string_view doing) {
    Statement s = prepare(sql);
    return s.step(doing) ? s.int64(0) : 0;
}

void Database::rollback_quietly() noexcept {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Database::pause_before_retry() {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

} // namespace myelin::store::detail
