#pragma once
// One generic deleter for C handles: std::unique_ptr<T, c_deleter<destroy_fn>>.
// Every libbson/libmongoc object is owned this way; nothing is freed by hand.

#include <memory>

namespace denormd {

template <auto Destroy>
struct c_deleter {
  template <class T>
  void operator()(T* p) const noexcept {
    if (p != nullptr) Destroy(p);
  }
};

template <class T, auto Destroy>
using c_handle = std::unique_ptr<T, c_deleter<Destroy>>;

}  // namespace denormd
