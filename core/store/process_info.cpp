#include "store/process_info.h"

#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>

#include <sys/types.h>
#include <unistd.h>

namespace myelin::store::detail {

namespace {
struct ProcessStat {
    char state = '?';
    int64_t start_ticks = 0;
};

std::optional<ProcessStat> read_stat(int64_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    // "pid (comm) state ..."; comm may hold spaces and parentheses, so parse after the last ')'.
    auto close = line.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(line.substr(close + 1));
    ProcessStat stat;
    fields >> stat.state;
    std::string skip;
    for (int field = 4; field < 22 && fields; ++field) // fields 4..21
        fields >> skip;
    if (!(fields >> stat.start_ticks)) return std::nullopt;
    return stat;
}
} // namespace

std::string this_host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return "localhost";
    return name;
}

int64_t this_process_id() {
    return int64_t(getpid());
}

std::optional<int64_t> process_start_ticks(int64_t pid) {
    auto stat = read_stat(pid);
    if (!stat) return std::nullopt;
    return stat->start_ticks;
}

bool process_alive(int64_t pid, std::optional<int64_t> start_ticks) {
    if (pid <= 0) return false;
    if (kill(pid_t(pid), 0) != 0 && errno == ESRCH) return false;
    auto stat = read_stat(pid);
    if (!stat) return true; // no /proc: trust kill()
    if (stat->state == 'Z' || stat->state == 'X') return false;
    if (start_ticks && stat->start_ticks != *start_ticks) return false; // the pid was reused
    return true;
}

} // namespace myelin::store::detail
