// privopt C++ core: version of the header set.
#pragma once

#define PRIVOPT_VERSION_MAJOR 0
#define PRIVOPT_VERSION_MINOR 1
#define PRIVOPT_VERSION_PATCH 0

namespace privopt {
inline constexpr const char* version = "0.1.0";
}  // namespace privopt
