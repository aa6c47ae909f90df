#pragma once
// Internal: the one oneDNN CPU engine and stream of the process, and a small primitive cache
// keyed by shape (training reuses the same shapes every step, and primitive creation costs far
// more than a small convolution). Used by the CPU backend's NN kernels (dnnl_scratch.h adds
// tensor-backed memory for its matmuls and recurrent step GEMMs).
#include <dnnl.hpp>
#include <omp.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace myelin::backend::dnnl_util {

inline dnnl::engine& engine() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

// oneDNN CPU streams are cheap, but a stream is not safe to share across threads: one per thread.
inline dnnl::stream& stream() {
    thread_local dnnl::stream s(engine());
    return s;
}

// A oneDNN memory object over host data (no copy).
inline dnnl::memory memory_at(const dnnl::memory::desc& md, void* data) {
    return dnnl::memory(md, engine(), data);
}

// Primitives are created with a scratchpad the caller passes at every execution. oneDNN's
// default, the library's scratchpad, belongs to the thread that created the primitive: a cached
// primitive executed by another thread after that one ended (an evaluation on a pool thread, a
// second training run) used freed memory and crashed.
inline dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

inline dnnl::memory::dims dims_of(std::initializer_list<int64_t> v) {
    return dnnl::memory::dims(v.begin(), v.end());
}

// Whether oneDNN runs bfloat16 convolutions and matmuls on this CPU (oneDNN 2.6 needs AVX-512
// for bf16 at all). Where it does not, autocast's ops compute in float32 on bf16-rounded
// operands, which gives the same values.
inline bool bf16_supported() {
    static const bool ok = [] {
        using dt = dnnl::memory::data_type;
        using tag = dnnl::memory::format_tag;
        try {
            const dnnl::convolution_forward::desc conv(
                dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                dnnl::memory::desc({1, 16, 4, 4}, dt::bf16, tag::any),
                dnnl::memory::desc({16, 16, 3, 3}, dt::bf16, tag::any),
                dnnl::memory::desc({1, 16, 2, 2}, dt::f32, tag::any), {1, 1}, {0, 0}, {0, 0},
                {0, 0});
            dnnl::convolution_forward::primitive_desc(conv, engine());
            const dnnl::matmul::desc matmul(dnnl::memory::desc({1, 1}, dt::bf16, tag::ab),
                                            dnnl::memory::desc({1, 1}, dt::bf16, tag::ab),
                                            dnnl::memory::desc({1, 1}, dt::f32, tag::ab));
            dnnl::matmul::primitive_desc(matmul, engine());
            return true;
        } catch (const dnnl::error&) {
            return false;
        }
    }();
    return ok;
}

// Below this many multiply-adds a oneDNN product runs on the calling thread alone, as OpenBLAS
// does (its SMP threshold, 4 x 65536): a thread team's fork and join cost more than they save,
// and on a busy machine every join waits for the partner thread to be scheduled.
inline constexpr int64_t kSerialMacs = int64_t(1) << 18;

// Sets the calling thread's OpenMP team size for its lifetime, then restores it (oneDNN sizes a
// primitive's work split by the thread count when it is created).
class TeamSize {
  public:
    explicit TeamSize(int threads) : saved_(omp_get_max_threads()) {
        if (threads != saved_) omp_set_num_threads(threads);
    }
    ~TeamSize() {
        if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
    }
    TeamSize(const TeamSize&) = delete;
    TeamSize& operator=(const TeamSize&) = delete;

  private:
    int saved_;
};

// Cache of primitive bundles keyed by a vector of integers (shape, attributes, kind). Bounded:
// cleared when it grows past `limit` entries (shapes rarely vary that much).
template <typename Entry> class PrimitiveCache {
  public:
    using Key = std::vector<int64_t>;
    template <typename Make> std::shared_ptr<Entry> get(const Key& key, Make&& make) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = map_.find(key);
            if (it != map_.end()) return it->second;
        }
        std::shared_ptr<Entry> e = make();
        std::lock_guard<std::mutex> lock(mutex_);
        if (map_.size() >= limit_) map_.clear();
        map_.emplace(key, e);
        return e;
    }

  private:
    std::mutex mutex_;
    std::map<Key, std::shared_ptr<Entry>> map_;
    size_t limit_ = 512;
};

} // namespace myelin::backend::dnnl_util
