#pragma once
// Thin RAII wrappers over one SQLite connection and its statements. Every failure becomes a
// StoreError naming the store file, what was being done, and what SQLite said, translated into
// words for the cases a user can act on (locked, not a database, read-only, disk full).
#include <myelin/store/run_store.h>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace myelin::store::detail {

// The store stayed locked by another connection longer than the busy timeout.
class BusyError : public StoreError {
  public:
    using StoreError::StoreError;
};

// A write found the disk (or the file system's quota) full.
class DiskFullError : public StoreError {
  public:
    using StoreError::StoreError;
};

class Database;

// The store's fault seam, for tests that need a full disk or a failing drive without a mount:
// before each write transaction commits, `fault(store file, doing)` gives an SQLite result code
// to fail it with (SQLITE_FULL, SQLITE_IOERR_WRITE, ...; SQLITE_OK: commit), and the transaction
// rolls back as SQLite's own failure would. Called on the thread that writes (the store's writer
// thread too). Empty (the default): none.
using WriteFault = std::function<int(const std::filesystem::path& store, std::string_view doing)>;
void set_write_fault_for_tests(WriteFault fault);

class Statement {
  public:
    Statement(Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
    Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
        other.stmt_ = nullptr;
    }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement& operator=(Statement&&) = delete;
    // Back to its connection's cache of prepared statements (reset), or finalized.
    ~Statement();

    // Parameters are 1-based, as in SQL (?1, ?2, ...).
    Statement& bind(int index, int64_t value);
    Statement& bind(int index, int value) { return bind(index, int64_t(value)); }
    Statement& bind(int index, double value); // NaN binds NULL (SQLite would anyway)
    Statement& bind(int index, std::string_view text);
    Statement& bind_blob(int index, std::span<const std::byte> bytes);
    Statement& bind_null(int index);

    // true: a row is ready; false: done. `doing` names the operation in errors.
    bool step(std::string_view doing);
    // Runs a statement that returns no rows, then resets it for reuse.
    void run(std::string_view doing);
    void reset();

    // Columns are 0-based.
    bool is_null(int column) const;
    int64_t int64(int column) const;
    double real(int column) const; // NULL reads as NaN
    std::string text(int column) const;
    std::span<const std::byte> blob(int column) const;

  private:
    Database* db_;
    sqlite3_stmt* stmt_;
};

// How a connection opens its file.
enum class OpenMode {
    ReadWriteCreate, // creating it when missing
    ReadOnly,        // SQLITE_OPEN_READONLY: locks as usual (and the -wal/-shm files they need)
    Immutable,       // immutable=1: no locks, no -wal/-shm files; for a file nobody can write
};

class Database {
  public:
    // Opens the file; nothing is read yet.
    Database(const std::filesystem::path& path, std::chrono::milliseconds busy_timeout,
             OpenMode mode = OpenMode::ReadWriteCreate);
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    ~Database();

    sqlite3* handle() const { return db_; }
    const std::filesystem::path& path() const { return path_; }
    std::chrono::milliseconds busy_timeout() const { return busy_timeout_; }

    void exec(const char* sql, std::string_view doing);
    // A statement for `sql`: a cached one when an idle one is there (preparing parses the SQL
    // and plans the query, which took most of a live view's time re-reading the store), else a
    // new one, cached when it is done.
    Statement prepare(std::string_view sql);
    int64_t query_int(const char* sql, std::string_view doing); // first column of the first row
    int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
    int changes() const { return sqlite3_changes(db_); }

    // Throws the StoreError (BusyError for SQLITE_BUSY / SQLITE_LOCKED), its problem() set from
    // result code rc; sqlite_message defaults to the connection's last message.
    [[noreturn]] void fail(int rc, std::string_view doing,
                           const char* sqlite_message = nullptr) const;
    // "run store '<path>': " + what
    std::string message(std::string_view what) const;

    // Runs fn inside BEGIN IMMEDIATE ... COMMIT. While another connection holds the write lock
    // the transaction is retried (fn runs again from the start) until the busy timeout has
    // passed, then the BusyError is thrown. Any other exception rolls back and propagates.
    template <typename F> void write_transaction(std::string_view doing, F&& fn) {
        const auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
        for (;;) {
            try {
                exec("BEGIN IMMEDIATE", doing);
                fn();
                commit(doing);
                return;
            } catch (const BusyError&) {
                rollback_quietly();
                if (std::chrono::steady_clock::now() >= deadline) throw;
                pause_before_retry();
            } catch (...) {
                rollback_quietly();
                throw;
            }
        }
    }
    // Runs fn again while it fails with a BusyError, until the busy timeout has passed. For
    // statements outside transactions that SQLite may refuse at once with SQLITE_BUSY instead of
    // waiting in its busy handler (switching the journal mode while another process opens the
    // same new file).
    template <typename F> decltype(auto) retry_while_busy(F&& fn) {
        const auto deadline = std::chrono::steady_clock::now() + busy_timeout_;
        for (;;) {
            try {
                return fn();
            } catch (const BusyError&) {
                if (std::chrono::steady_clock::now() >= deadline) throw;
                pause_before_retry();
            }
        }
    }
    // Runs fn inside one read transaction (a consistent snapshot across its statements).
    template <typename F> decltype(auto) read_transaction(std::string_view doing, F&& fn) {
        exec("BEGIN", doing);
        try {
            if constexpr (std::is_void_v<decltype(fn())>) {
                fn();
                exec("COMMIT", doing);
            } else {
                auto result = fn();
                exec("COMMIT", doing);
                return result;
            }
        } catch (...) {
            rollback_quietly();
            throw;
        }
    }

  private:
    friend class Statement;
    void rollback_quietly() noexcept;
    // COMMIT, unless the write fault (set_write_fault_for_tests) fails it (write_fault.cpp).
    void commit(std::string_view doing);
    static void pause_before_retry();
    // Keeps a finished statement for the next prepare() of its SQL (reset, bindings cleared);
    // finalizes it when one for that SQL is already kept or the cache is full.
    void release(sqlite3_stmt* stmt) noexcept;

    // Idle prepared statements by their SQL. Bounded: some SQL is built per call.
    static constexpr size_t kMaxCachedStatements = 64;
    std::unordered_map<std::string, sqlite3_stmt*> idle_;
    std::filesystem::path path_;
    std::chrono::milliseconds busy_timeout_;
    sqlite3* db_ = nullptr;
};

} // namespace myelin::store::detail
