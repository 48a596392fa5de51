// Status assertions (Debian's abseil has no gtest status matchers).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

#define CXDS_STATUS_CONCAT_INNER(a, b) a##b
#define CXDS_STATUS_CONCAT(a, b) CXDS_STATUS_CONCAT_INNER(a, b)

#define EXPECT_OK(expr)                                       \
  do {                                                        \
    const absl::Status _st = ::cxds::testing::ToStatus(expr); \
    EXPECT_TRUE(_st.ok()) << _st.ToString();                  \
  } while (0)

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const absl::Status _st = ::cxds::testing::ToStatus(expr); \
    ASSERT_TRUE(_st.ok()) << _st.ToString();                  \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr) ASSERT_OK_AND_ASSIGN_IMPL(CXDS_STATUS_CONCAT(_status_or_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)   \
  auto tmp = (expr);                                \
  ASSERT_TRUE(tmp.ok()) << tmp.status().ToString(); \
  lhs = std::move(*tmp)

namespace cxds::testing {
inline absl::Status ToStatus(const absl::Status& status) { return status; }
template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}
}  // namespace cxds::testing
