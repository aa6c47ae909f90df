#pragma once
// Helpers shared by the fuzz targets.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

// The input as a file that never touches the disk, for readers that take only a path: an
// anonymous memory file (memfd), reachable as /proc/self/fd/N. Opening that path gives a new
// file description, so the reader sees the whole file from offset 0 and its real size.
class MemoryFile {
  public:
    MemoryFile(const uint8_t* data, size_t size) : fd_(::memfd_create("fuzz-input", MFD_CLOEXEC)) {
        if (fd_ < 0) std::abort();
        while (size > 0) {
            const ssize_t done = ::write(fd_, data, size);
            if (done <= 0) std::abort();
            data += done;
            size -= static_cast<size_t>(done);
        }
    }
    ~MemoryFile() { ::close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

  private:
    int fd_;
};
