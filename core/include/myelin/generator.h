#pragma once
// One seeded pseudo-random generator (Mersenne Twister, as PyTorch's CPU generator) behind every
// random op. Its state can be saved into a checkpoint and restored for exact resumption.
#include <cstdint>
#include <random>
#include <string>

namespace myelin {

class Generator {
  public:
    explicit Generator(uint64_t seed = 67280421310721ULL) { manual_seed(seed); }
    void manual_seed(uint64_t seed);
    uint64_t initial_seed() const { return seed_; }
    // Opaque text form of the whole state (seed + engine + cached normal).
    std::string get_state() const;
    // Throws myelin::Error when the text is not a state written by get_state().
    void set_state(const std::string& state);

    uint32_t next_u32() { return static_cast<uint32_t>(engine_()); }
    uint64_t next_u64();
    float uniform_float();      // [0, 1) with 24 random bits
    double uniform_double();    // [0, 1) with 53 random bits
    double normal();            // standard normal (Box-Muller, caches the second value)
    uint64_t below(uint64_t n); // uniform integer in [0, n)

  private:
    uint64_t seed_ = 0;
    std::mt19937 engine_;
    double cached_normal_ = 0.0;
    bool has_cached_normal_ = false;
};

Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

} // namespace myelin
