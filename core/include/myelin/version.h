#pragma once

namespace myelin {
// Semantic version of the core library; the build system's project() version.
const char* version();
} // namespace myelin
