#pragma once
// The harness of test_backend_ops: host arrays, running a primitive on a backend (copies in,
// the kernel, copies out) and checking a case on the CPU against a reference and on every
// other backend against the CPU.
#include "backend/backend.h"

#include <myelin/cuda.h>
#include <myelin/error.h>

#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

namespace backend_ops {

using namespace myelin;
using backend::Backend;
using backend::View;

// A host array: its storage and the (possibly strided) view of it a kernel gets.
struct Array {
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;     // elements
    std::vector<unsigned char> bytes; // storage

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t s : shape)
            n *= s;
        return n;
    }
    int64_t offset(int64_t flat) const { // flat index in row-major order -> storage element
        int64_t off = 0;
        for (int d = int(shape.size()) - 1; d >= 0; --d) {
            off += (flat % shape[size_t(d)]) * strides[size_t(d)];
            flat /= shape[size_t(d)];
        }
        return off;
    }
    double get(int64_t flat) const {
        const unsigned char* p = bytes.data() + offset(flat) * int64_t(dtype_size(dtype));
        switch (dtype) {
        case DType::Float32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case DType::Float64: {
            double v;
            std::memcpy(&v, p, 8);
            return v;
        }
        case DType::Int64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return double(v);
        }
        case DType::Bool:
        case DType::UInt8:
            return double(*p);
        case DType::Float16:
        case DType::BFloat16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return dtype == DType::Float16 ? double(Half::to_float(h))
                                           : double(BFloat16::to_float(h));
        }
        default:
            return std::nan("");
        }
    }
    void set(int64_t flat, double v) {
        unsigned char* p = bytes.data() + offset(flat) * int64_t(dtype_size(dtype));
        if (dtype == DType::Float32) {
            const float f = float(v);
            std::memcpy(p, &f, 4);
        } else if (dtype == DType::Float64) {
            std::memcpy(p, &v, 8);
        } else if (dtype == DType::Int64) {
            const int64_t i = int64_t(v);
            std::memcpy(p, &i, 8);
        } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
            const uint16_t h = dtype == DType::Float16 ? Half::from_float(float(v))
                                                       : BFloat16::from_float(float(v));
            std::memcpy(p, &h, 2);
        } else {
            *p = static_cast<unsigned char>(v);
        }
    }
};

inline Array make(DType dtype, std::vector<int64_t> shape,
                  const std::function<double(int64_t)>& fill) {
    Array a;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.strides.assign(a.shape.size(), 1);
    for (int d = int(a.shape.size()) - 2; d >= 0; --d)
        a.strides[size_t(d)] = a.strides[size_t(d) + 1] * a.shape[size_t(d) + 1];
    a.bytes.assign(size_t(a.numel()) * dtype_size(dtype), 0);
    for (int64_t i = 0; i < a.numel(); ++i)
        a.set(i, fill ? fill(i) : 0.0);
    return a;
}

// Deterministic values in [lo, hi) (a fixed LCG: the same on every run and backend).
inline std::function<double(int64_t)> values(double lo, double hi, uint64_t seed = 1) {
    return [lo, hi, seed](int64_t i) {
        uint64_t x = (uint64_t(i) + 1) * 6364136223846793005ull + seed * 1442695040888963407ull;
        x ^= x >> 33;
        return lo + (hi - lo) * double(x % 1000003) / 1000003.0;
    };
}

// Copies the arrays to the backend's memory, runs `kernel` on their views, copies them back.
inline std::vector<Array> run_on(Backend& b, std::vector<Array> arrays,
                                 const std::function<void(Backend&, std::vector<View>&)>& kernel) {
    std::vector<void*> memory;
    std::vector<View> views;
    for (const Array& a : arrays) {
        void* p = b.allocate(a.bytes.size());
        b.copy_from_host(p, a.bytes.data(), a.bytes.size());
        memory.push_back(p);
        View v;
        v.data = p;
        v.dtype = a.dtype;
        v.ndim = int(a.shape.size());
        for (int d = 0; d < v.ndim; ++d) {
            v.shape[d] = a.shape[size_t(d)];
            v.strides[d] = a.strides[size_t(d)];
        }
        views.push_back(v);
    }
    try {
        kernel(b, views);
    } catch (...) {
        for (size_t i = 0; i < arrays.size(); ++i)
            b.deallocate(memory[i], arrays[i].bytes.size());
        throw;
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
        b.copy_to_host(arrays[i].bytes.data(), memory[i], arrays[i].bytes.size());
        b.deallocate(memory[i], arrays[i].bytes.size());
    }
    return arrays;
}

inline bool close(double got, double want, double rtol, double atol) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::abs(got - want) <= atol + rtol * std::abs(want);
}

inline double rtol_for(DType t) {
    return t == DType::Float64 ? 1e-12 : 2e-6;
}

// Says which device the CUDA leg runs on, or why it is skipped (the GPU kit reads this line).
inline void report_cuda_leg() {
    if (!backend::find(DeviceType::CUDA))
        qInfo("CUDA: skipped (no device: %s)", cuda_status().reason.c_str());
    else
        qInfo("CUDA: %s", backend::get(DeviceType::CUDA).info().details.c_str());
}

// The other backends present (CUDA when built and a device is usable).
inline std::vector<Backend*> other_backends() {
    std::vector<Backend*> out;
    if (Backend* cuda = backend::find(DeviceType::CUDA)) out.push_back(cuda);
    return out;
}

// Runs a case on the CPU (checked against `reference` for output `out`) and on every other
// backend (checked against the CPU's result). Returns the number of elements checked.
inline int64_t check_case(const QString& what, const std::vector<Array>& inputs, size_t out,
                          const std::function<void(Backend&, std::vector<View>&)>& kernel,
                          const std::function<double(int64_t)>& reference, double rtol,
                          double atol) {
    const std::vector<Array> cpu = run_on(backend::get(DeviceType::CPU), inputs, kernel);
    const Array& result = cpu[out];
    int64_t checked = 0;
    for (int64_t i = 0; i < result.numel(); ++i, ++checked)
        if (!close(result.get(i), reference(i), rtol, atol)) {
            QTest::qFail(qPrintable(QStringLiteral("CPU %1: element %2 is %3, expected %4")
                                        .arg(what)
                                        .arg(i)
                                        .arg(result.get(i), 0, 'g', 17)
                                        .arg(reference(i), 0, 'g', 17)),
                         __FILE__, __LINE__);
            return checked;
        }
    for (Backend* other : other_backends()) {
        std::vector<Array> got;
        try {
            got = run_on(*other, inputs, kernel);
        } catch (const DeviceError& e) {
            // What a backend does not run it refuses by name (ggml skips those ops too).
            const QString message = QString::fromStdString(e.what());
            if (!message.contains(QStringLiteral("not supported by the ")))
                QTest::qFail(qPrintable(what + QStringLiteral(": ") + message), __FILE__, __LINE__);
            qInfo("%s: %s skipped (%s)", other->info().name.c_str(), qPrintable(what), e.what());
            continue;
        }
        for (int64_t i = 0; i < result.numel(); ++i)
            if (!close(got[out].get(i), result.get(i), std::max(rtol, 1e-5),
                       std::max(atol, 1e-6))) {
                QTest::qFail(qPrintable(QStringLiteral("%1 %2: element %3 is %4, CPU has %5")
                                            .arg(QString::fromStdString(other->info().name), what)
                                            .arg(i)
                                            .arg(got[out].get(i), 0, 'g', 17)
                                            .arg(result.get(i), 0, 'g', 17)),
                             __FILE__, __LINE__);
                return checked;
            }
    }
    return checked;
}

} // namespace backend_ops
