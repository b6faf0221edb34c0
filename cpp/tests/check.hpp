// Minimal test helpers for the C++ tests (no framework dependency).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>

inline int privopt_test_failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++privopt_test_failures;                                                 \
        }                                                                            \
    } while (0)

#define CHECK_NEAR(a, b, tol) CHECK(std::fabs((a) - (b)) <= (tol))

#define CHECK_THROWS(expr)                      \
    do {                                        \
        bool threw_ = false;                    \
        try {                                   \
            expr;                               \
        } catch (...) {                         \
            threw_ = true;                      \
        }                                       \
        CHECK(threw_ && "expected an exception"); \
    } while (0)

inline int test_result(const char* name) {
    if (privopt_test_failures == 0) std::printf("%s: all checks passed\n", name);
    return privopt_test_failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
