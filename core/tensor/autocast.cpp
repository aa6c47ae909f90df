// The thread-local autocast state (see myelin/autocast.h).
#include <myelin/autocast.h>
#include <myelin/error.h>

#include <string>

namespace myelin {

namespace {
thread_local std::optional<DType> current;
}

std::optional<DType> autocast_dtype() {
    return current;
}

AutocastGuard::AutocastGuard(std::optional<DType> lower) : previous_(current) {
    if (lower && *lower != DType::BFloat16 && *lower != DType::Float16)
        throw DTypeError(std::string("autocast: expected bfloat16 or float16, got ") +
                         dtype_name(*lower));
    current = lower;
}

AutocastGuard::~AutocastGuard() {
    current = previous_;
}

} // namespace myelin
