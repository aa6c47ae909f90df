// Run store throughput, one JSON line per workload (bench/run.sh prints them with the others):
//   store_ingest             metric points/s through log_metric (one call per point, as the
//                            trainer logs), from the first call until flush() returns
//   store_ingest_batched     the same through log_metrics (one span per step)
//   store_list_runs_100      ms per list_runs() over 100 runs with 10 latest metrics each
//   store_downsample_1M      ms per metric_series_downsampled of a 1M-point series to 2000
//                            buckets (median of repeats; _cold: the first call after open)
//   store_series_1M          ms to read the same series whole (metric_series), for scale
//
//   myelin_bench_store [--points N] [--dir FOLDER]   (default 1000000, a temporary folder)
#include <myelin/store/run_store.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

using namespace myelin::store;
namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

template <typename F> double median_ms(int repeats, F&& fn) {
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
        auto start = Clock::now();
        fn();
        times.push_back(seconds_since(start) * 1e3);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

void line(const char* workload, double value, const char* unit, const char* goal = nullptr,
          bool met = true) {
    std::printf("{\"workload\": \"%s\", \"myelin\": %.3f, \"unit\": \"%s\"", workload, value, unit);
    if (goal) std::printf(", \"goal\": \"%s\", \"meets_goal\": %s", goal, met ? "true" : "false");
    std::printf("}\n");
    std::fflush(stdout);
}
} // namespace

int main(int argc, char** argv) {
    int64_t points = 1'000'000;
    fs::path dir;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--points"))
            points = std::atoll(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
    }
    const bool own_dir = dir.empty();
    if (own_dir)
        dir = fs::temp_directory_path() / ("myelin_bench_store." + std::to_string(getpid()));
    fs::create_directories(dir);
    const fs::path path = dir / "bench.sqlite";
    fs::remove(path);
    try {
        {
            RunStore store = RunStore::open(path);
            // Ingest: 10 keys per step, as a trainer logging loss, lr, grad norms...
            const int keys = 10;
            std::vector<std::string> names;
            for (int k = 0; k < keys; ++k)
                names.push_back("train/metric_" + std::to_string(k));
            int64_t run = store.create_run({.name = "ingest"});
            auto start = Clock::now();
            for (int64_t step = 0; step < points / keys; ++step)
                for (int k = 0; k < keys; ++k)
                    store.log_metric(run, names[size_t(k)], step, std::sin(double(step + k)));
            store.flush();
            double rate = double(points / keys * keys) / seconds_since(start);
            line("store_ingest", rate, "points/s", ">= 200000", rate >= 200000);

            int64_t run2 = store.create_run({.name = "ingest batched"});
            std::vector<MetricPoint> step_points(static_cast<size_t>(keys));
            start = Clock::now();
            for (int64_t step = 0; step < points / keys; ++step) {
                for (int k = 0; k < keys; ++k)
                    step_points[size_t(k)] = {run2, names[size_t(k)], step,
                                              std::sin(double(step + k)), 0};
                store.log_metrics(step_points);
            }
            store.flush();
            rate = double(points / keys * keys) / seconds_since(start);
            line("store_ingest_batched", rate, "points/s", ">= 200000", rate >= 200000);

            // The long series: one key, `points` consecutive steps.
            int64_t long_run = store.create_run({.name = "long"});
            std::vector<MetricPoint> chunk;
            for (int64_t step = 0; step < points; ++step) {
                chunk.push_back({long_run, "loss", step, 1.0 / double(step + 1), 0});
                if (chunk.size() == 10000) {
                    store.log_metrics(chunk);
                    chunk.clear();
                }
            }
            store.log_metrics(chunk);
            // 100 runs in all, each with 10 latest metrics.
            for (int r = 3; r < 100; ++r) {
                int64_t id = store.create_run({.name = "run " + std::to_string(r)});
                for (int k = 0; k < keys; ++k)
                    store.log_metric(id, names[size_t(k)], 100, double(k));
                store.finish_run(id, RunStatus::Finished);
            }
            store.flush();
        }
        // Reads from a fresh store object, as the studio would.
        RunStore store = RunStore::open(path);
        size_t listed = 0;
        double list_ms = median_ms(21, [&] { listed = store.list_runs().size(); });
        if (listed != 100) throw std::runtime_error("expected 100 runs");
        line("store_list_runs_100", list_ms, "ms");

        const int64_t long_run = 3;
        size_t buckets = 0;
        auto start = Clock::now();
        buckets = store.metric_series_downsampled(long_run, "loss", {}, 2000).size();
        line("store_downsample_1M_cold", seconds_since(start) * 1e3, "ms", "< 50",
             seconds_since(start) * 1e3 < 50);
        double down_ms = median_ms(21, [&] {
            buckets = store.metric_series_downsampled(long_run, "loss", {}, 2000).size();
        });
        if (buckets == 0 || buckets > 2000) throw std::runtime_error("bad bucket count");
        line("store_downsample_1M", down_ms, "ms", "< 50", down_ms < 50);
        size_t n = 0;
        double whole_ms = median_ms(3, [&] { n = store.metric_series(long_run, "loss").size(); });
        if (n != size_t(points)) throw std::runtime_error("series lost points");
        line("store_series_1M", whole_ms, "ms");
        std::fprintf(stderr, "bench_store: %zu buckets, store file %.1f MB\n", buckets,
                     double(fs::file_size(path)) / 1e6);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_store: %s\n", e.what());
        return 1;
    }
    if (own_dir) fs::remove_all(dir);
    return 0;
}
