# Project-wide compile settings, applied per target so dependencies are not affected.
add_library(denormd_warnings INTERFACE)
target_compile_options(denormd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                  -Wnon-virtual-dtor -Wold-style-cast)
if(DENORMD_WERROR)
  target_compile_options(denormd_warnings INTERFACE -Werror)
endif()
if(DENORMD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# denormd_library(NAME SOURCES... [DEPS ...]) adds library denormd_NAME, alias denormd::NAME.
function(denormd_library name)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS" ${ARGN})
  add_library(denormd_${name} STATIC ${arg_SOURCES})
  add_library(denormd::${name} ALIAS denormd_${name})
  target_include_directories(denormd_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(denormd_${name} PUBLIC ${arg_DEPS} PRIVATE denormd_warnings)
endfunction()

# denormd_test_pch(TARGET) precompiles the headers nearly every test file includes. Parsing
# gtest and the standard library again in each of ~90 test files was a large part of a
# clean build's time (CI builds from scratch).
function(denormd_test_pch target)
  target_precompile_headers(${target} PRIVATE <gtest/gtest.h> <map> <memory> <optional> <string>
                            <string_view> <vector>)
endfunction()
