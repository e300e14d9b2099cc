#pragma once
// overloaded{f, g, ...}: one callable from several lambdas, for std::visit over a variant
// where each alternative needs its own code (a missing one does not compile).

namespace denormd {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace denormd
