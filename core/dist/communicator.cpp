// The single-process communicator, launch detection and what every communicator shares.
#include <myelin/dist/communicator.h>
#include <myelin/dist/mpi.h>
#include <myelin/error.h>

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

namespace myelin::dist {

namespace {

class SingleProcess final : public Communicator {
  public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string backend() const override { return "single process"; }
    std::unique_ptr<PendingCollective> start_allreduce_sum(void*, int64_t, DType) override {
        struct Done final : PendingCollective {
            bool test() override { return true; }
            void wait() override {}
        };
        return std::make_unique<Done>();
    }
    void broadcast(void*, int64_t, int) override {}
    std::vector<std::string> allgather_string(const std::string& text) override { return {text}; }
    void report_failure(const std::string&) noexcept override {}
    [[noreturn]] void abort(int exit_code) noexcept override { std::_Exit(exit_code); }
};

int positive_int(const char* text) {
    if (!text || !*text) return 0;
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    return *end == '\0' && v > 0 && v < INT_MAX ? int(v) : 0;
}

} // namespace

std::shared_ptr<Communicator> make_single_process_communicator() {
    return std::make_shared<SingleProcess>();
}

std::string Communicator::broadcast_string(const std::string& text, int root) {
    int64_t size = int64_t(text.size());
    broadcast(&size, sizeof size, root);
    std::string out = rank() == root ? text : std::string(size_t(size), '\0');
    if (size > 0) broadcast(out.data(), size, root);
    return out;
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
}

DistMode parse_dist_mode(std::string_view text) {
    if (text == "auto") return DistMode::Auto;
    if (text == "mpi") return DistMode::Mpi;
    if (text == "none") return DistMode::None;
    throw Error("--dist: expected auto, mpi or none, got '" + std::string(text) + "'");
}

Launch detect_launch(const Environment& environment) {
    Launch launch;
    auto from = [&](const char* variable, const char* size_variable) {
        const char* value = environment(variable);
        if (!value || !*value) return false;
        launch.detected = true;
        launch.launcher = variable;
        launch.world_size = positive_int(environment(size_variable));
        return true;
    };
    if (from("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE")) return launch;
    if (from("PMIX_RANK", "PMIX_SIZE")) return launch;
    if (from("PMI_SIZE", "PMI_SIZE")) return launch;
    // srun sets SLURM_STEP_ID for each task; an sbatch script running one process sets none.
    const char* step = environment("SLURM_STEP_ID");
    if (step && *step && positive_int(environment("SLURM_NTASKS")) > 0) {
        launch.detected = true;
        launch.launcher = "SLURM_STEP_ID";
        launch.world_size = positive_int(environment("SLURM_NTASKS"));
    }
    return launch;
}

Launch detect_launch() {
    return detect_launch([](const char* name) { return std::getenv(name); });
}

} // namespace myelin::dist
