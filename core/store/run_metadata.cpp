// What a person adds to a run after the fact (name, note, tags), and the cheap reads a runs
// table needs: a change counter to test before re-reading, and series ranges for best values.
#include "store/run_store_impl.h"
#include "store/summaries.h"

#include <algorithm>
#include <set>

namespace myelin::store {

using detail::Statement;

namespace {
constexpr size_t kMaxNameBytes = 200;
constexpr size_t kMaxNoteBytes = 64 * 1024;
constexpr size_t kMaxTagBytes = 64;

bool has_control_character(std::string_view text) {
    return std::any_of(text.begin(), text.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

std::string quoted(std::string_view text) {
    return "'" + std::string(text) + "'";
}

// Why `tag` cannot be a tag, or empty when it can.
std::string tag_problem(std::string_view tag) {
    if (tag.empty()) return "a tag cannot be empty";
    if (tag.size() > kMaxTagBytes)
        return "tag " + quoted(tag) + " is longer than " + std::to_string(kMaxTagBytes) + " bytes";
    if (tag.find(',') != std::string_view::npos)
        return "tag " + quoted(tag) + " holds a comma (commas separate tags)";
    if (has_control_character(tag))
        return "tag " + quoted(tag) + " holds a line break or another control character";
    if (tag.front() == ' ' || tag.back() == ' ')
        return "tag " + quoted(tag) + " starts or ends with a space";
    return {};
}

// Runs `write` (which changes the run's row or its tags) in one transaction; an unknown run is
// refused before anything is written.
template <typename F>
void write_run(RunStore::Impl& s, int64_t run, std::string_view doing, F&& write) {
    std::lock_guard lock(s.db_mutex);
    s.db->write_transaction(doing, [&] {
        Statement exists = s.db->prepare("SELECT 1 FROM runs WHERE id = ?1");
        exists.bind(1, run);
        if (!exists.step(doing))
            throw StoreError(s.message("run " + std::to_string(run) + " does not exist"));
        write();
    });
}
} // namespace

void RunStore::rename_run(int64_t run, std::string_view name) {
    Impl& s = impl();
    s.require_writable();
    const std::string which = "renaming run " + std::to_string(run) + ": ";
    if (name.empty() || name.find_first_not_of(' ') == std::string_view::npos)
        throw StoreError(s.message(which + "a run name cannot be empty"));
    if (name.size() > kMaxNameBytes)
        throw StoreError(s.message(which + "the name is longer than " +
                                   std::to_string(kMaxNameBytes) + " bytes"));
    if (has_control_character(name))
        throw StoreError(s.message(which + "the name " + quoted(name) +
                                   " holds a line break or another control character"));
    write_run(s, run, "renaming a run", [&] {
        Statement update = s.db->prepare("UPDATE runs SET name = ?2 WHERE id = ?1");
        update.bind(1, run).bind(2, name).run("renaming a run");
    });
}

void RunStore::set_run_note(int64_t run, std::string_view note) {
    Impl& s = impl();
    s.require_writable();
    if (note.size() > kMaxNoteBytes)
        throw StoreError(s.message("the note of run " + std::to_string(run) + " is longer than " +
                                   std::to_string(kMaxNoteBytes / 1024) + " KiB"));
    write_run(s, run, "setting a run's note", [&] {
        Statement update = s.db->prepare("UPDATE runs SET note = ?2 WHERE id = ?1");
        update.bind(1, run).bind(2, note).run("setting a run's note");
    });
}

void RunStore::set_run_tags(int64_t run, const std::vector<std::string>& tags) {
    Impl& s = impl();
    s.require_writable();
    for (const auto& tag : tags)
        if (auto problem = tag_problem(tag); !problem.empty())
            throw StoreError(s.message("tags of run " + std::to_string(run) + ": " + problem));
    const std::set<std::string> unique(tags.begin(), tags.end());
    write_run(s, run, "setting a run's tags", [&] {
        Statement erase = s.db->prepare("DELETE FROM run_tags WHERE run = ?1");
        erase.bind(1, run).run("setting a run's tags");
        Statement insert = s.db->prepare("INSERT INTO run_tags (run, tag) VALUES (?1, ?2)");
        for (const auto& tag : unique)
            insert.bind(1, run).bind(2, tag).run("setting a run's tags");
    });
}

uint64_t RunStore::data_version() const {
    Impl& s = impl();
    std::lock_guard lock(s.db_mutex);
    // data_version moves with other connections' commits (this store's writer thread included);
    // total_changes with this connection's own. Both only grow, so their sum changes with either.
    const int64_t others = s.db->query_int("PRAGMA data_version", "reading the data version");
    return uint64_t(others) + uint64_t(sqlite3_total_changes64(s.db->handle()));
}

std::vector<MetricRange> RunStore::metric_ranges(std::string_view key) const {
    Impl& s = impl();
    s.settle_for_read();
    std::lock_guard lock(s.db_mutex);
    // The coarsest level's blocks (65536 steps) cover each series in one or a few rows. CROSS
    // JOIN keeps runs as the outer loop (one primary-key seek per run); left to itself the
    // planner scanned every summary row (240 ms for 10M points).
    Statement q = s.db->prepare(
        "SELECT r.id, min(m.min), max(m.max) FROM runs r CROSS JOIN metric_summaries m ON "
        "m.run = r.id AND m.key = ?1 AND m.level = ?2 GROUP BY r.id ORDER BY r.id");
    q.bind(1, key).bind(2, detail::kSummaryLevels);
    std::vector<MetricRange> out;
    while (q.step("reading metric ranges"))
        out.push_back({q.int64(0), q.real(1), q.real(2)});
    return out;
}

} // namespace myelin::store
