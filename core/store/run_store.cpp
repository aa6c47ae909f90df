// RunStore: opening, the synchronous writes, crash detection and deletion. The queued writes
// are in writer.cpp, the reads in reads.cpp.
#include "store/process_info.h"
#include "store/run_store_impl.h"
#include "store/schema.h"

#include <cstdio>
#include <cstdlib>
#include <system_error>

#include <unistd.h>

namespace fs = std::filesystem;

namespace myelin::store {

using detail::Database;
using detail::Statement;

namespace detail {
double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}
} // namespace detail

namespace {
constexpr std::string_view kStatusNames[] = {"running", "finished", "stopped", "failed",
                                             "interrupted"};

void require_run(Database& db, int64_t run, std::string_view what = "run") {
    Statement s = db.prepare("SELECT 1 FROM runs WHERE id = ?1");
    s.bind(1, run);
    if (!s.step("looking up a run"))
        throw StoreError(
            db.message(std::string(what) + " " + std::to_string(run) + " does not exist"));
}

std::string absolute_path(const fs::path& path) {
    return path.empty() ? std::string() : fs::absolute(path).lexically_normal().string();
}
} // namespace

std::string_view status_name(RunStatus status) {
    return kStatusNames[int(status)];
}

std::optional<RunStatus> parse_run_status(std::string_view name) {
    for (size_t i = 0; i < std::size(kStatusNames); ++i)
        if (kStatusNames[i] == name) return RunStatus(i);
    return std::nullopt;
}

fs::path default_store_path() {
    const char* xdg = std::getenv("XDG_DATA_HOME");
    // The XDG spec says to ignore a relative XDG_DATA_HOME.
    if (xdg && *xdg && fs::path(xdg).is_absolute()) return fs::path(xdg) / "myelin" / "runs.sqlite";
    const char* home = std::getenv("HOME");
    fs::path base = home && *home ? fs::path(home) : fs::current_path();
    return base / ".local" / "share" / "myelin" / "runs.sqlite";
}

// ---- lifecycle ------------------------------------------------------------------------------

namespace {
// Why the store cannot be written ("" when it can). Permission bits only: root passes them all,
// which is what MYELIN_STORE_READ_ONLY is for.
std::string why_not_writable(const fs::path& path, const fs::path& folder) {
    const char* forced = std::getenv("MYELIN_STORE_READ_ONLY");
    if (forced && *forced && std::string_view(forced) != "0")
        return "MYELIN_STORE_READ_ONLY is set";
    std::error_code ec;
    if (fs::exists(path, ec) && access(path.c_str(), W_OK) != 0) return "the file is not writable";
    // SQLite creates the -wal and -shm files beside the database.
    if (fs::exists(folder, ec) && access(folder.c_str(), W_OK | X_OK) != 0)
        return "the folder '" + folder.string() +
               "' is not writable (a run store keeps its -wal and -shm files beside it)";
    return {};
}
} // namespace

RunStore::Impl::Impl(const fs::path& requested, const StoreOptions& opts)
    : options(opts), host(detail::this_host_name()) {
    if (requested.empty()) throw StoreError("run store: the path is empty");
    path = fs::absolute(requested).lexically_normal();
    folder = path.parent_path();
    if (options.queue_capacity == 0 || options.batch_points == 0)
        throw StoreError(message("queue_capacity and batch_points must be at least 1"));
    std::error_code ec;
    if (fs::is_directory(path, ec))
        throw StoreError(message("this is a folder; expected a run store file"));
    const std::string not_writable = why_not_writable(path, folder);
    if (options.access == StoreAccess::ReadOnly)
        open_read_only(not_writable.empty() ? "it was opened read-only" : not_writable);
    else if (not_writable.empty())
        open_writable();
    else if (options.access == StoreAccess::ReadWriteIfAllowed)
        open_read_only(not_writable);
    else
        throw StoreError(message("read-only (" + not_writable +
                                 "): new runs cannot be recorded in it. Make the file and its "
                                 "folder writable, or choose another store"),
                         StoreProblem::ReadOnly);
    writer = std::thread([this] { writer_loop(); });
}

void RunStore::Impl::open_read_only(const std::string& why) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw StoreError(message("does not exist, and " + why + ", so it cannot be created"),
                         StoreProblem::ReadOnly);
    // A file nobody may write, with no -wal file beside it, is read as immutable: nothing is
    // created next to it (its folder may be read-only too) and no lock is needed.
    const bool immutable =
        access(path.c_str(), W_OK) != 0 && !fs::exists(fs::path(path.string() + "-wal"), ec);
    db = std::make_unique<Database>(path, options.busy_timeout,
                                    immutable ? detail::OpenMode::Immutable
                                              : detail::OpenMode::ReadOnly);
    detail::open_schema_read_only(*db);
    if (options.access == StoreAccess::ReadWriteIfAllowed) detail::check_integrity(*db);
    condition = StoreProblem::ReadOnly;
    condition_message = message("read-only (" + why +
                                "): its runs can be read, but new runs cannot be recorded in it "
                                "and its runs cannot be renamed, tagged or deleted. Make the "
                                "file and its folder writable, or choose another store");
}

void RunStore::Impl::open_writable() {
    if (options.access == StoreAccess::ReadWrite) {
        std::error_code ec;
        fs::create_directories(folder, ec);
        if (ec)
            throw StoreError(
                message("cannot create its folder '" + folder.string() + "': " + ec.message()));
    }
    const bool check_first = options.access == StoreAccess::ReadWriteIfAllowed;
    db = std::make_unique<Database>(path, options.busy_timeout);
    integrity_checked = detail::open_schema(*db, check_first);
    if (options.access == StoreAccess::ReadWriteIfAllowed) {
        // Can a run be recorded? BEGIN IMMEDIATE and an empty COMMIT take the write lock and
        // write nothing.
        try {
            db->write_transaction("checking that the store can be written", [] {});
        } catch (const detail::BusyError&) {
            condition = StoreProblem::Locked;
            condition_message = message(
                "locked by another program or connection (it held the write lock for longer "
                "than the " +
                std::to_string(options.busy_timeout.count()) +
                " ms waited): its runs can be read, but new runs cannot be recorded until it "
                "lets go. Close the program holding it (another training, an SQLite browser), "
                "or choose another store");
        }
    }
    writer_db = std::make_unique<Database>(path, options.busy_timeout);
    detail::configure_connection(*writer_db);
    if (options.mark_interrupted_at_open && condition != StoreProblem::Locked) {
        std::lock_guard lock(db_mutex);
        try {
            mark_interrupted_locked();
        } catch (const detail::BusyError&) {
            // Another process is writing: the store is still usable; the next open or
            // mark_interrupted_runs() marks them.
        } catch (const detail::DiskFullError&) {
            // A full disk: what the store holds can still be read (runs list, the studio's Runs
            // tab); the runs are marked when there is room again.
        }
    }
}

RunStore::Impl::~Impl() {
    if (closed) return;
    try {
        if (auto error = stop_writer())
            std::fprintf(stderr, "myelin: closing the run store: %s\n", error->c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin: closing the run store: %s\n", e.what());
    }
}

std::string RunStore::Impl::message(std::string_view what) const {
    return "run store '" + path.string() + "': " + std::string(what);
}

void RunStore::Impl::check_open() const {
    if (closed) throw StoreError(message("the store is closed"));
}

void RunStore::Impl::require_writable() const {
    if (condition == StoreProblem::ReadOnly)
        throw StoreError(condition_message, StoreProblem::ReadOnly);
}

std::string_view problem_name(StoreProblem problem) {
    switch (problem) {
    case StoreProblem::Locked:
        return "locked";
    case StoreProblem::ReadOnly:
        return "read-only";
    case StoreProblem::Damaged:
        return "damaged";
    case StoreProblem::Newer:
        return "newer";
    case StoreProblem::None:
        break;
    }
    return "";
}

StoreProblem RunStore::condition() const {
    return impl().condition;
}

const std::string& RunStore::condition_message() const {
    return impl().condition_message;
}

RunStore::RunStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;
RunStore::~RunStore() = default;

RunStore RunStore::open(const fs::path& path, const StoreOptions& options) {
    return RunStore(std::make_unique<Impl>(path, options));
}

RunStore::Impl& RunStore::impl() const {
    if (!impl_) throw StoreError("run store: use of a moved-from RunStore");
    impl_->check_open();
    return *impl_;
}

const fs::path& RunStore::path() const {
    if (!impl_) throw StoreError("run store: use of a moved-from RunStore");
    return impl_->path;
}

void RunStore::close() {
    if (!impl_ || impl_->closed) return;
    Impl& s = *impl_;
    auto error = s.stop_writer();
    {
        std::lock_guard lock(s.db_mutex);
        s.closed = true;
        s.writer_db.reset();
        s.db.reset();
    }
    if (error) throw StoreError(*error);
}

// ---- synchronous writes ---------------------------------------------------------------------

int64_t RunStore::create_run(const RunInfo& info) {
    Impl& s = impl();
    s.require_writable();
    const std::string host = info.host.empty() ? s.host : info.host;
    const int64_t pid = info.pid ? info.pid : detail::this_process_id();
    const auto pid_start =
        host == s.host ? detail::process_start_ticks(pid) : std::optional<int64_t>();
    const double started_at = info.started_at > 0 ? info.started_at : detail::unix_now();
    const std::string parent_checkpoint = absolute_path(info.parent_checkpoint);
    int64_t id = 0;
    {
        std::lock_guard lock(s.db_mutex);
        s.db->write_transaction("creating a run", [&] {
            if (info.parent_run) require_run(*s.db, *info.parent_run, "parent run");
            Statement insert = s.db->prepare(
                "INSERT INTO runs (name, status, project, started_at, parent_run, "
                "parent_checkpoint, host, device, threads, pid, pid_start, project_path) VALUES "
                "(?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
            insert.bind(1, info.name).bind(2, info.project_json).bind(3, started_at);
            if (info.parent_run) insert.bind(4, *info.parent_run);
            insert.bind(5, parent_checkpoint).bind(6, host).bind(7, info.device);
            insert.bind(8, info.threads).bind(9, pid);
            if (pid_start) insert.bind(10, *pid_start);
            insert.bind(11, absolute_path(info.project_path));
            insert.run("creating a run");
            id = s.db->last_insert_id();
        });
    }
    std::lock_guard lock(s.known_mutex);
    s.known_runs.insert(id);
    return id;
}

void RunStore::set_params(int64_t run, const std::map<std::string, std::string>& params) {
    Impl& s = impl();
    s.require_writable();
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction("setting parameters", [&] {
        require_run(*s.db, run);
        Statement upsert =
            s.db->prepare("INSERT OR REPLACE INTO params (run, key, value) VALUES (?1, ?2, ?3)");
        for (const auto& [key, value] : params)
            upsert.bind(1, run).bind(2, key).bind(3, value).run("setting a parameter");
    });
}

int64_t RunStore::add_artifact(int64_t run, const ArtifactInfo& artifact) {
    Impl& s = impl();
    s.require_writable();
    const fs::path file = fs::absolute(artifact.path).lexically_normal();
    std::error_code ec;
    if (artifact.kind.empty())
        throw StoreError(s.message("an artifact of run " + std::to_string(run) +
                                   " needs a kind (\"checkpoint\", ...)"));
    if (!fs::exists(file, ec))
        throw StoreError(s.message("artifact file '" + file.string() + "' of run " +
                                   std::to_string(run) + " does not exist"));
    if (!fs::is_regular_file(file, ec))
        throw StoreError(s.message("artifact '" + file.string() + "' of run " +
                                   std::to_string(run) + " is not a regular file"));
    // Hashing a large checkpoint takes a while: do it before taking the connection.
    const std::string sha = artifact.sha256.empty() ? sha256_file(file) : artifact.sha256;
    int64_t id = 0;
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction("recording an artifact", [&] {
        require_run(*s.db, run);
        Statement insert = s.db->prepare(
            "INSERT INTO artifacts (run, kind, path, sha256, step, created_at, metadata) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        insert.bind(1, run).bind(2, artifact.kind).bind(3, file.string()).bind(4, sha);
        insert.bind(5, artifact.step).bind(6, detail::unix_now());
        insert.bind(7, artifact.metadata_json.empty() ? "{}" : artifact.metadata_json);
        insert.run("recording an artifact");
        id = s.db->last_insert_id();
    });
    return id;
}

void RunStore::log_event(int64_t run, const RunEvent& event) {
    Impl& s = impl();
    s.require_writable();
    if (event.kind.empty())
        throw StoreError(s.message("an event of run " + std::to_string(run) + " needs a kind"));
    s.flush(); // after the points that led to it
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction("recording an event", [&] {
        require_run(*s.db, run);
        Statement insert =
            s.db->prepare("INSERT INTO events (run, step, wall_time, kind, layer, message) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        insert.bind(1, run).bind(2, event.step);
        insert.bind(3, event.wall_time > 0 ? event.wall_time : detail::unix_now());
        insert.bind(4, event.kind).bind(5, event.layer).bind(6, event.message);
        insert.run("recording an event");
    });
}

void RunStore::finish_run(int64_t run, RunStatus status, std::string_view error) {
    Impl& s = impl();
    s.require_writable();
    if (status == RunStatus::Running)
        throw StoreError(s.message("finish_run of run " + std::to_string(run) +
                                   ": the final status cannot be 'running'"));
    s.flush(); // the run's points land before its end
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction("finishing a run", [&] {
        Statement update =
            s.db->prepare("UPDATE runs SET status = ?2, ended_at = ?3, error = ?4 WHERE id = ?1");
        update.bind(1, run).bind(2, status_name(status)).bind(3, detail::unix_now());
        update.bind(4, error).run("finishing a run");
        if (s.db->changes() == 0)
            throw StoreError(s.message("run " + std::to_string(run) + " does not exist"));
    });
}

// ---- queued writes --------------------------------------------------------------------------

void RunStore::Impl::require_known_run(int64_t run) {
    {
        std::lock_guard lock(known_mutex);
        if (known_runs.count(run)) return;
    }
    {
        std::lock_guard lock(db_mutex);
        check_open();
        require_run(*db, run);
    }
    std::lock_guard lock(known_mutex);
    known_runs.insert(run);
}

namespace {
void check_point(const RunStore::Impl& s, int64_t run, std::string_view key, int64_t step) {
    if (key.empty())
        throw StoreError(s.message("a metric of run " + std::to_string(run) + " has an empty key"));
    if (step < 0 || step > detail::kMaxStep)
        throw StoreError(s.message("metric '" + std::string(key) + "' of run " +
                                   std::to_string(run) + ": step " + std::to_string(step) +
                                   " is out of range (0 to 2^62 - 1)"));
}
} // namespace

void RunStore::log_metric(int64_t run, std::string_view key, int64_t step, double value,
                          double wall_time) {
    MetricPoint point{run, std::string(key), step, value, wall_time};
    log_metrics(std::span(&point, 1));
}

void RunStore::log_metrics(std::span<const MetricPoint> points) {
    Impl& s = impl();
    s.require_writable();
    for (const MetricPoint& p : points) {
        check_point(s, p.run, p.key, p.step);
        s.require_known_run(p.run);
    }
    const double now = detail::unix_now();
    // In chunks, so one big call cannot hold more than the queue's capacity.
    const size_t chunk = std::max<size_t>(1, s.options.queue_capacity / 4);
    for (size_t begin = 0; begin < points.size(); begin += chunk) {
        auto part = points.subspan(begin, std::min(chunk, points.size() - begin));
        s.enqueue(part, nullptr, part.size(), now);
    }
}

void RunStore::log_histogram(int64_t run, std::string_view key, int64_t step, double min,
                             double max, std::span<const double> counts, double wall_time) {
    Impl& s = impl();
    s.require_writable();
    check_point(s, run, key, step);
    if (counts.empty() || !(min <= max))
        throw StoreError(s.message("histogram '" + std::string(key) + "' of run " +
                                   std::to_string(run) +
                                   ": needs at least one bin and min <= max"));
    s.require_known_run(run);
    detail::QueuedHistogram h{run,
                              std::string(key),
                              step,
                              wall_time,
                              min,
                              max,
                              std::vector<double>(counts.begin(), counts.end())};
    s.enqueue({}, &h, 1 + counts.size() / 8, detail::unix_now());
}

void RunStore::flush() {
    impl().flush();
}

// ---- crash detection ------------------------------------------------------------------------

std::vector<int64_t> RunStore::Impl::mark_interrupted_locked() {
    struct Candidate {
        int64_t id, pid;
        std::optional<int64_t> pid_start;
    };
    std::vector<Candidate> dead;
    if (condition == StoreProblem::ReadOnly) return {};
    {
        Statement running = db->prepare(
            "SELECT id, pid, pid_start FROM runs WHERE status = 'running' AND host = ?1");
        running.bind(1, host);
        while (running.step("looking for interrupted runs")) {
            Candidate c{running.int64(0), running.int64(1), std::nullopt};
            if (!running.is_null(2)) c.pid_start = running.int64(2);
            if (!detail::process_alive(c.pid, c.pid_start)) dead.push_back(c);
        }
    }
    std::vector<int64_t> marked;
    if (dead.empty()) return marked;
    // The first write of this connection: only to a file that passed quick_check.
    if (!integrity_checked) {
        detail::check_integrity(*db);
        integrity_checked = true;
    }
    db->write_transaction("marking interrupted runs", [&] {
        marked.clear();
        Statement update = db->prepare(
            "UPDATE runs SET status = 'interrupted', error = ?2, ended_at = max(started_at, "
            "coalesce((SELECT max(wall_time) FROM latest_metrics WHERE run = ?1), started_at)) "
            "WHERE id = ?1 AND status = 'running'");
        for (const Candidate& c : dead) {
            update.bind(1, c.id).bind(2, "process " + std::to_string(c.pid) + " on " + host +
                                             " ended without finishing the run");
            update.run("marking an interrupted run");
            if (db->changes() > 0) marked.push_back(c.id);
        }
    });
    return marked;
}

std::vector<int64_t> RunStore::mark_interrupted_runs() {
    Impl& s = impl();
    std::lock_guard lock(s.db_mutex);
    return s.mark_interrupted_locked();
}

// ---- deletion -------------------------------------------------------------------------------

fs::path RunStore::artifact_folder(int64_t run) const {
    return impl().folder / "runs" / std::to_string(run);
}

DeleteResult RunStore::delete_run(int64_t run) {
    Impl& s = impl();
    s.require_writable();
    s.flush();
    DeleteResult result;
    std::vector<fs::path> doomed;
    const fs::path run_folder = artifact_folder(run);
    std::lock_guard lock(s.db_mutex);
    s.mark_interrupted_locked();
    Run r = s.read_run_locked(run, false);
    if (r.status == RunStatus::Running)
        throw StoreError(s.message("run " + std::to_string(run) + " is still running " +
                                   "(process " + std::to_string(r.pid) + " on " + r.host +
                                   "); stop it before deleting it"));

    Statement shared = s.db->prepare(
        "SELECT EXISTS (SELECT 1 FROM artifacts WHERE path = ?1 AND run <> ?2) OR EXISTS "
        "(SELECT 1 FROM runs WHERE parent_checkpoint = ?1 AND id <> ?2)");
    auto used_elsewhere = [&](const fs::path& p) {
        shared.bind(1, p.string()).bind(2, run);
        bool used = shared.step("checking artifact references") && shared.int64(0) != 0;
        shared.reset();
        return used;
    };
    auto keep = [&](const fs::path& p, const std::string& why) {
        result.kept_files.push_back(p.string() + ": " + why);
    };
    const std::string folder_prefix = run_folder.string() + "/";

    // Artifacts outside the run folder: only unchanged regular files (or symlinks) nobody else
    // lists. Files inside the run folder are handled with the folder below.
    {
        Statement list = s.db->prepare("SELECT path, sha256 FROM artifacts WHERE run = ?1");
        list.bind(1, run);
        while (list.step("listing artifacts")) {
            fs::path p = list.text(0);
            if (p.string().starts_with(folder_prefix)) continue;
            std::error_code ec;
            auto status = fs::symlink_status(p, ec);
            if (ec || !fs::exists(status)) continue; // already gone
            if (used_elsewhere(p)) {
                keep(p, "another run lists it");
            } else if (fs::is_symlink(status)) {
                doomed.push_back(p); // removes the link only
            } else if (!fs::is_regular_file(status)) {
                keep(p, "not a regular file");
            } else {
                std::string now_sha;
                try {
                    now_sha = sha256_file(p);
                } catch (const StoreError& e) {
                    keep(p, e.what());
                    continue;
                }
                if (now_sha != list.text(1))
                    keep(p, "its contents changed since it was recorded");
                else
                    doomed.push_back(p);
            }
        }
    }
    // The run folder is the store's own: everything in it goes, but files another run lists.
    std::vector<fs::path> folders;
    {
        std::error_code ec;
        if (fs::is_directory(fs::symlink_status(run_folder, ec))) {
            folders.push_back(run_folder); // parents before children: removed in reverse
            for (auto it = fs::recursive_directory_iterator(run_folder, ec);
                 !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
                const fs::path& p = it->path();
                if (it->is_directory(ec) && !it->is_symlink(ec))
                    folders.push_back(p);
                else if (used_elsewhere(p))
                    keep(p, "another run lists it");
                else
                    doomed.push_back(p);
            }
        }
    }

    s.db->write_transaction("deleting a run", [&] {
        Statement erase = s.db->prepare("DELETE FROM runs WHERE id = ?1");
        erase.bind(1, run).run("deleting a run");
    });
    {
        std::lock_guard known(s.known_mutex);
        s.known_runs.erase(run);
    }
    for (const fs::path& p : doomed) {
        std::error_code ec;
        if (fs::remove(p, ec))
            result.removed_files.push_back(p);
        else if (ec)
            keep(p, "could not be removed: " + ec.message());
    }
    // Deepest first; folders still holding kept files stay.
    for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
        std::error_code ec;
        fs::remove(*it, ec);
    }
    return result;
}

} // namespace myelin::store
