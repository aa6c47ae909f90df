#pragma once
// Run stores in the four conditions a store can be found in (issue 41): locked by another
// program, read-only, damaged (a page in the middle overwritten) and written by a newer schema
// version; shared by the core, studio and CLI tests. Needs SQLite (the "other program").
#include <myelin/store/run_store.h>

#include <sqlite3.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace myelin::test {

// A plain SQLite connection: another program holding the store, or changing its header.
class SqliteConnection {
  public:
    explicit SqliteConnection(const std::filesystem::path& path) {
        sqlite3_open(path.c_str(), &db_);
    }
    ~SqliteConnection() { sqlite3_close(db_); }
    SqliteConnection(const SqliteConnection&) = delete;
    SqliteConnection& operator=(const SqliteConnection&) = delete;
    int exec(const std::string& sql) {
        return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
    }

  private:
    sqlite3* db_ = nullptr;
};

// The pid of a process that has certainly ended (and been reaped).
inline int64_t endedProcessId() {
    const pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/true", "true", static_cast<char*>(nullptr));
        _exit(0);
    }
    waitpid(pid, nullptr, 0);
    return pid;
}

// A healthy store: a finished run "baseline" with a loss series, and a run "crashed" still
// marked running whose process has ended, so an open that may write would mark it
// interrupted. No large values (no overflow pages), no deletions (no free pages): every page
// is a b-tree page that PRAGMA quick_check reads. Closed, so everything is in the main file.
inline void makeStore(const std::filesystem::path& path) {
    auto store = store::RunStore::open(path);
    const int64_t finished = store.create_run({.name = "baseline"});
    for (int step = 0; step < 400; ++step)
        store.log_metric(finished, "loss", step, 1.0 / (1 + step));
    store.finish_run(finished, store::RunStatus::Finished);
    store::RunInfo crashed{.name = "crashed"};
    crashed.pid = endedProcessId();
    const int64_t running = store.create_run(crashed);
    store.log_metric(running, "loss", 0, 2.0);
    store.close();
}

// Overwrites the page in the middle of the file with a pattern no page has.
inline void damageMiddlePage(const std::filesystem::path& path) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char header[18] = {};
    file.read(reinterpret_cast<char*>(header), sizeof header);
    size_t pageSize = size_t(header[16]) << 8 | header[17];
    if (pageSize == 1) pageSize = 65536;
    const auto pages = std::filesystem::file_size(path) / pageSize;
    const std::vector<char> junk(pageSize, char(0xA5));
    file.seekp(std::streamoff((pages / 2) * pageSize));
    file.write(junk.data(), std::streamsize(junk.size()));
}

// Sets the schema version one past what this build reads.
inline void makeNewer(const std::filesystem::path& path) {
    SqliteConnection raw(path);
    raw.exec("PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1));
}

// Root is not stopped by permission bits: there the read-only tests set MYELIN_STORE_READ_ONLY
// (the store's documented switch) instead of relying on chmod alone.
inline bool permissionsStopWrites() {
    return geteuid() != 0;
}

// chmod 0444 on the file and 0555 on its folder (or back to 0644 / 0755), as a read-only medium
// would present them.
inline void setReadOnlyMode(const std::filesystem::path& path, bool readOnly) {
    chmod(path.c_str(), readOnly ? 0444 : 0644);
    chmod(path.parent_path().c_str(), readOnly ? 0555 : 0755);
}

} // namespace myelin::test
