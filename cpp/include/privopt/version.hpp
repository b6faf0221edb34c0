// privopt C++ core: the version of the header set, and of the whole project.
//
// This file is the one place the version is written. CMakeLists.txt reads the three numbers below
// into project(VERSION) (hence the CMake package version), and pyproject.toml reads them into the
// Python package metadata (hence privopt.__version__); keep each on its own line as written.
#pragma once

#define PRIVOPT_VERSION_MAJOR 0
#define PRIVOPT_VERSION_MINOR 1
#define PRIVOPT_VERSION_PATCH 0

#define PRIVOPT_STRINGIFY_IMPL(x) #x
#define PRIVOPT_STRINGIFY(x) PRIVOPT_STRINGIFY_IMPL(x)
#define PRIVOPT_VERSION_STRING                                          \
    PRIVOPT_STRINGIFY(PRIVOPT_VERSION_MAJOR)                            \
    "." PRIVOPT_STRINGIFY(PRIVOPT_VERSION_MINOR) "." PRIVOPT_STRINGIFY( \
        PRIVOPT_VERSION_PATCH)

namespace privopt {
/// "MAJOR.MINOR.PATCH", e.g. "0.1.0".
inline constexpr const char* version = PRIVOPT_VERSION_STRING;
/// MAJOR * 10000 + MINOR * 100 + PATCH, for compile-time comparisons.
inline constexpr int version_number =
    PRIVOPT_VERSION_MAJOR * 10000 + PRIVOPT_VERSION_MINOR * 100 + PRIVOPT_VERSION_PATCH;
}  // namespace privopt
