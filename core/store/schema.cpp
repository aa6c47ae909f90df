#include "store/schema.h"

#include <cstdio>
#include <iterator>
#include <string>

namespace myelin::store::detail {

namespace {

// Version 1. Times are unix seconds (REAL). Metric values may be NULL: SQLite stores NaN as NULL,
// and NaN losses are what a run store must keep.
void migrate_to_v1(Database& db) {
    db.exec(R"sql(
CREATE TABLE runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused after delete_run
    name              TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN
                          ('running', 'finished', 'stopped', 'failed', 'interrupted')),
    project           TEXT NOT NULL DEFAULT '',  -- project JSON snapshot
    started_at        REAL NOT NULL,
    ended_at          REAL,
    parent_run        INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    parent_checkpoint TEXT NOT NULL DEFAULT '',
    host              TEXT NOT NULL DEFAULT '',
    device            TEXT NOT NULL DEFAULT '',
    threads           INTEGER NOT NULL DEFAULT 0,
    pid               INTEGER NOT NULL DEFAULT 0,
    pid_start         INTEGER,                   -- /proc start ticks: tells a reused pid apart
    error             TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_parent ON runs (parent_run);

CREATE TABLE params (
    run   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run, key)
) WITHOUT ROWID;

CREATE TABLE metrics (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    step      INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    value     REAL,
    PRIMARY KEY (run, key, step)
) WITHOUT ROWID;

CREATE TABLE latest_metrics (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    step      INTEGER NOT NULL,
    value     REAL,
    wall_time REAL NOT NULL,
    PRIMARY KEY (run, key)
) WITHOUT ROWID;

-- Per series, min/max/first/last/count of aligned step blocks of 4^level steps (level 2..8),
-- kept by the writer; downsampling reads them instead of every point.
CREATE TABLE metric_summaries (
    run         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    level       INTEGER NOT NULL,
    block       INTEGER NOT NULL,
    first_step  INTEGER NOT NULL,
    last_step   INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    min         REAL,
    max         REAL,
    first_value REAL,
    last_value  REAL,
    PRIMARY KEY (run, key, level, block)
) WITHOUT ROWID;

-- counts: nbins little-endian float64 for equal bins over [min, max].
CREATE TABLE histograms (
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key       TEXT NOT NULL,
    step      INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    min       REAL NOT NULL,
    max       REAL NOT NULL,
    nbins     INTEGER NOT NULL,
    counts    BLOB NOT NULL,
    PRIMARY KEY (run, key, step)
) WITHOUT ROWID;

CREATE TABLE artifacts (
    id         INTEGER PRIMARY KEY,
    run        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    path       TEXT NOT NULL,  -- absolute
    sha256     TEXT NOT NULL,  -- hex
    step       INTEGER NOT NULL,
    created_at REAL NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX artifacts_by_run ON artifacts (run);
CREATE INDEX artifacts_by_path ON artifacts (path);
)sql",
            "creating the schema (version 1)");
}

// Version 2: run events (a breakpoint fired, ...): what happened at a step, and where.
void migrate_to_v2(Database& db) {
    db.exec(R"sql(
CREATE TABLE events (
    id        INTEGER PRIMARY KEY,
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step      INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    kind      TEXT NOT NULL,
    layer     TEXT NOT NULL DEFAULT '',
    message   TEXT NOT NULL
);
CREATE INDEX events_by_run ON events (run, step);
)sql",
            "creating the events table (version 2)");
}

// Version 3: feature maps, one row per (run, layer, step); layer '' holds the probe examples
// themselves. A rowid table (not WITHOUT ROWID): its blobs are tens to hundreds of kilobytes,
// and the unique index lists layers and steps without reading them.
void migrate_to_v3(Database& db) {
    db.exec(R"sql(
CREATE TABLE feature_maps (
    id        INTEGER PRIMARY KEY,
    run       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    layer     TEXT NOT NULL,
    step      INTEGER NOT NULL,
    wall_time REAL NOT NULL,
    examples  INTEGER NOT NULL,
    channels  INTEGER NOT NULL,
    height    INTEGER NOT NULL,
    width     INTEGER NOT NULL,
    scale_exp INTEGER NOT NULL,  -- value = float16 * 2^-scale_exp
    data      BLOB NOT NULL      -- examples*channels*height*width little-endian float16
);
CREATE UNIQUE INDEX feature_maps_by_layer ON feature_maps (run, layer, step);
)sql",
            "creating the feature_maps table (version 3)");
}

// Version 4: what a person adds to a run (a note, tags) and the project file it was trained
// from. Tags get their own table: one run has several, and a tag names many runs.
void migrate_to_v4(Database& db) {
    db.exec(R"sql(
ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN project_path TEXT NOT NULL DEFAULT '';  -- absolute, or ''
CREATE TABLE run_tags (
    run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (run, tag)
) WITHOUT ROWID;
)sql",
            "adding notes, tags and project paths (version 4)");
}

// Version 5: recurrent layers' gradient through time, one row per (run, layer, step, layer of
// the stack, direction); a handful of rows per probe step, each a few hundred bytes.
void migrate_to_v5(Database& db) {
    db.exec(R"sql(
CREATE TABLE time_gradients (
    id          INTEGER PRIMARY KEY,
    run         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    layer       TEXT NOT NULL,
    step        INTEGER NOT NULL,
    stack_layer INTEGER NOT NULL,
    direction   INTEGER NOT NULL,
    wall_time   REAL NOT NULL,
    norms       BLOB NOT NULL  -- little-endian float64, one per time step
);
CREATE UNIQUE INDEX time_gradients_by_layer
    ON time_gradients (run, layer, step, stack_layer, direction);
)sql",
            "creating the time_gradients table (version 5)");
}

// migrations[i] brings a store from version i to version i + 1.
using Migration = void (*)(Database&);
constexpr Migration kMigrations[] = {migrate_to_v1, migrate_to_v2, migrate_to_v3, migrate_to_v4,
                                     migrate_to_v5};
static_assert(std::size(kMigrations) == size_t(kSchemaVersion));

struct FileIdentity {
    int64_t application_id = 0;
    int64_t version = 0;
    int64_t objects = 0; // entries in sqlite_schema
};

// The reads themselves; inside a transaction they see one snapshot.
FileIdentity read_identity(Database& db) {
    FileIdentity id;
    id.application_id = db.query_int("PRAGMA application_id", "reading the file header");
    id.version = db.query_int("PRAGMA user_version", "reading the schema version");
    id.objects = db.query_int("SELECT count(*) FROM sqlite_schema", "reading the schema");
    return id;
}

// One snapshot: read one by one, another process's migration could commit in between (tables
// seen, version not yet) and a fresh store would look like a foreign database.
FileIdentity identify(Database& db) {
    return db.retry_while_busy([&] {
        return db.read_transaction("identifying the file", [&] { return read_identity(db); });
    });
}

void check_identity(Database& db, const FileIdentity& id) {
    if (id.application_id != 0 && id.application_id != kApplicationId) {
        char text[160];
        std::snprintf(text, sizeof text,
                      "an SQLite database of another application (application_id 0x%llx), "
                      "expected a Myelin run store (0x%llx)",
                      static_cast<unsigned long long>(id.application_id),
                      static_cast<unsigned long long>(kApplicationId));
        throw StoreError(db.message(text));
    }
    if (id.application_id == 0 && id.version == 0 && id.objects > 0)
        throw StoreError(db.message("an SQLite database that is not a Myelin run store (it has "
                                    "tables but no run store schema version)"));
    if (id.version > kSchemaVersion)
        throw StoreError(db.message("schema version " + std::to_string(id.version) +
                                    " was written by a newer Myelin; this build reads versions "
                                    "up to " +
                                    std::to_string(kSchemaVersion) +
                                    ". Nothing was written to it: open it with that Myelin or "
                                    "a newer one, or choose another store"),
                         StoreProblem::Newer);
}

std::string journal_mode(Database& db) {
    return db.retry_while_busy([&] {
        Statement mode = db.prepare("PRAGMA journal_mode");
        return mode.step("reading the journal mode") ? mode.text(0) : std::string();
    });
}

} // namespace

void check_integrity(Database& db) {
    const std::string first = db.retry_while_busy([&] {
        Statement check = db.prepare("PRAGMA quick_check(1)");
        return check.step("checking the file (PRAGMA quick_check)") ? check.text(0)
                                                                    : std::string("ok");
    });
    if (first != "ok")
        throw StoreError(db.message("the database is damaged (PRAGMA quick_check: " + first +
                                    "). Nothing was written to it: restore it from a backup, "
                                    "save what is readable with `sqlite3 FILE .recover`, or "
                                    "choose another store"),
                         StoreProblem::Damaged);
}

void open_schema_read_only(Database& db) {
    const FileIdentity id = identify(db);
    check_identity(db, id);
    if (id.version < kSchemaVersion)
        throw StoreError(
            db.message(
                id.version == 0 && id.objects == 0
                    ? std::string("the file is empty, not a run store yet, and it is read-only")
                    : "schema version " + std::to_string(id.version) +
                          " needs migrating to version " + std::to_string(kSchemaVersion) +
                          ", which a read-only store cannot be: make the file and its "
                          "folder writable and open it once"),
            StoreProblem::ReadOnly);
    db.exec("PRAGMA foreign_keys = ON", "configuring the connection");
}

void configure_connection(Database& db) {
    // NORMAL in WAL mode: a committed transaction survives a crash of the process (not
    // necessarily of the machine), at a fraction of FULL's fsync cost.
    db.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", "configuring the connection");
}

bool open_schema(Database& db, bool check_first) {
    // Identify before writing anything, so a foreign or newer file is left untouched.
    const FileIdentity found = identify(db);
    check_identity(db, found);
    // The WAL switch and a migration write: a file that has content is checked first.
    const bool will_write = found.version < kSchemaVersion || journal_mode(db) != "wal";
    const bool checked = check_first || (will_write && found.objects > 0);
    if (checked) check_integrity(db);
    {
        const std::string got = db.retry_while_busy([&] {
            Statement mode = db.prepare("PRAGMA journal_mode = WAL");
            return mode.step("switching to WAL mode") ? mode.text(0) : std::string();
        });
        if (got != "wal")
            throw StoreError(db.message("cannot switch to WAL journal mode (the file system "
                                        "gave '" +
                                        got + "'); a run store must be on a local file system"));
    }
    db.retry_while_busy([&] { configure_connection(db); });
    if (identify(db).version == kSchemaVersion) return checked;
    db.write_transaction("migrating the schema", [&] {
        // Another process may have migrated it since we looked.
        FileIdentity id = read_identity(db);
        check_identity(db, id);
        for (int64_t v = id.version; v < kSchemaVersion; ++v)
            kMigrations[v](db);
        db.exec(("PRAGMA application_id = " + std::to_string(kApplicationId) +
                 "; PRAGMA user_version = " + std::to_string(kSchemaVersion))
                    .c_str(),
                "recording the schema version");
    });
    return checked;
}

} // namespace myelin::store::detail
