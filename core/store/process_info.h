#pragma once
// What the store needs to know about processes: this host's name, and whether the process that
// created a run is still alive.
#include <cstdint>
#include <optional>
#include <string>

namespace myelin::store::detail {

std::string this_host_name();
int64_t this_process_id();
// The process's start time in clock ticks after boot (/proc/<pid>/stat field 22); a pid that is
// reused later has a different one. nullopt when the process does not exist or /proc is missing.
std::optional<int64_t> process_start_ticks(int64_t pid);
// kill(pid, 0) says the pid exists, it is not a zombie, and (when known) it started at
// `start_ticks`.
bool process_alive(int64_t pid, std::optional<int64_t> start_ticks);

} // namespace myelin::store::detail
