// The store's write fault seam (sqlite_db.h): off, a commit costs one relaxed atomic load more.
#include "store/sqlite_db.h"

#include <atomic>
#include <mutex>

namespace myelin::store::detail {

namespace {
std::mutex fault_mutex;
WriteFault fault; // fault_mutex
std::atomic<bool> fault_set{false};
} // namespace

void set_write_fault_for_tests(WriteFault f) {
    std::lock_guard lock(fault_mutex);
    fault = std::move(f);
    fault_set = bool(fault);
}

void Database::commit(std::string_view doing) {
    if (fault_set.load(std::memory_order_relaxed)) {
        int rc = SQLITE_OK;
        {
            std::lock_guard lock(fault_mutex);
            if (fault) rc = fault(path_, doing);
        }
        if (rc != SQLITE_OK) fail(rc, doing, sqlite3_errstr(rc));
    }
    exec("COMMIT", doing);
}

} // namespace myelin::store::detail
