#pragma once
// A small std::expected stand-in (C++20 has none and Boost 1.74 has no system::result):
// expected failures are values, never exceptions.

#include <cassert>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace denormd {

// Fields a layer attaches to an error beyond message and code (the test server's DuplicateKey
// carries keyPattern/keyValue); the layer that attaches them downcasts to read them.
struct error_details {
  virtual ~error_details() = default;
};

// An error: a message for people and an optional machine code (server error code, or 0).
struct error {
  std::string message;
  int code = 0;
  std::shared_ptr<const error_details> details{};
};

template <class E>
struct unexpected {
  E value;
};
inline unexpected<error> fail(std::string message, int code = 0) {
  return {error{std::move(message), code}};
}

template <class T, class E = error>
class expected {
 public:
  expected(T v) : v_(std::in_place_index<0>, std::move(v)) {}
  expected(unexpected<E> e) : v_(std::in_place_index<1>, std::move(e.value)) {}
  // Lets an error from another expected propagate with `return other.error();`.
  expected(const E& e) requires(!std::is_same_v<T, E>) : v_(std::in_place_index<1>, e) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const E& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, E> v_;
};

// expected<void>: success or an error.
template <class E>
class expected<void, E> {
 public:
  expected() = default;
  expected(unexpected<E> e) : e_(std::move(e.value)), ok_(false) {}
  expected(const E& e) : e_(e), ok_(false) {}
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const {
    assert(!ok_);
    return e_;
  }

 private:
  E e_{};
  bool ok_ = true;
};

using status = expected<void>;

}  // namespace denormd
