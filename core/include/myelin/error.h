#pragma once
// Every failure the core reports is a myelin::Error (or a subclass) with a message that names
// the operation, the offending input and what was expected.
#include <stdexcept>
#include <string>

namespace myelin {

class Error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};
class ShapeError : public Error {
  public:
    using Error::Error;
};
class DTypeError : public Error {
  public:
    using Error::Error;
};
class IndexError : public Error {
  public:
    using Error::Error;
};
class DeviceError : public Error {
  public:
    using Error::Error;
};
class AutogradError : public Error {
  public:
    using Error::Error;
};

} // namespace myelin
