#pragma once
// Dims: a small inline vector of int64 used for shapes, strides and dim lists. Tensors have at
// most kMaxDims dimensions, so shape bookkeeping never touches the heap (per-op overhead).
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace myelin {

inline constexpr int kMaxDims = 8;

class Dims {
  public:
    Dims() = default;
    Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.size()); }
    Dims(std::span<const int64_t> values) { assign(values.data(), values.size()); }
    Dims(const std::vector<int64_t>& values) { assign(values.data(), values.size()); }
    static Dims filled(int n, int64_t value);

    int size() const { return n_; }
    bool empty() const { return n_ == 0; }
    int64_t operator[](int i) const { return v_[i]; }
    int64_t& operator[](int i) { return v_[i]; }
    const int64_t* begin() const { return v_; }
    const int64_t* end() const { return v_ + n_; }
    int64_t* begin() { return v_; }
    int64_t* end() { return v_ + n_; }
    const int64_t* data() const { return v_; }
    int64_t back() const { return v_[n_ - 1]; }
    void push_back(int64_t x);
    void insert(int pos, int64_t x);
    void erase(int pos);
    void resize(int n, int64_t fill = 0);
    int64_t numel() const; // product (1 for an empty Dims)
    std::vector<int64_t> vec() const { return {v_, v_ + n_}; }
    std::string str() const; // "[2, 3]"
    bool operator==(const Dims& o) const;

  private:
    void assign(const int64_t* p, size_t n);
    int64_t v_[kMaxDims] = {};
    int n_ = 0;
};

} // namespace myelin
