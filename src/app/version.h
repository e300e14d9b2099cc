#pragma once
// The version printed by --version and exported as denormd_build_info.
namespace denormd::app {
inline constexpr const char* denormd_version = "0.1.0";
}  // namespace denormd::app
