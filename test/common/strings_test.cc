#include "common/strings.h"

#include "gtest/gtest.h"

namespace cxds {
namespace {

TEST(StringsTest, JsonQuoteEscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonQuote("plain"), "\"plain\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("line\nnext\ttab"), "\"line\\nnext\\ttab\"");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
}

TEST(StringsTest, EscapeUntrustedEscapesWhatCouldForgeALineOrAField) {
  EXPECT_EQ(EscapeUntrusted("node-a.ns~10.0.0.1"), "node-a.ns~10.0.0.1");
  EXPECT_EQ(EscapeUntrusted("a\nb\r\t\"\\"), "a\\nb\\r\\t\\\"\\\\");
  EXPECT_EQ(EscapeUntrusted("k=v x"), "k\\x3dv\\x20x");
  EXPECT_EQ(EscapeUntrusted("k=v x", 100, UntrustedIn::kQuoted), "k=v x");
  EXPECT_EQ(EscapeUntrusted(std::string("\x01\x7f\xe2\x80\xa8", 5)), "\\x01\\x7f\\xe2\\x80\\xa8");
}

TEST(StringsTest, EscapeUntrustedKeepsAtMostMaxBytesAndSaysHowLongItWas) {
  EXPECT_EQ(EscapeUntrusted(std::string(10, 'a'), 4), "aaaa\u2026(10 bytes)");
  EXPECT_EQ(EscapeUntrusted(std::string(4, 'a'), 4), "aaaa");
}

TEST(StringsTest, TruncateUntrustedCutsAtACharacterBoundary) {
  EXPECT_EQ(TruncateUntrusted("short", 10), "short");
  EXPECT_EQ(TruncateUntrusted("abcdef", 3), "abc\u2026(6 bytes)");
  // "\u00e9" is two bytes: a cut inside it keeps neither.
  EXPECT_EQ(TruncateUntrusted("a\u00e9b", 2), "a\u2026(4 bytes)");
  EXPECT_EQ(TruncateUntrusted("\U0001F600x", 3), "\u2026(5 bytes)") << "a 4-byte character is kept whole or not";
  // Found by node_identity_fuzzer: a run of continuation bytes (not UTF-8) was backed over to
  // the start, keeping nothing; at most three bytes are given up.
  EXPECT_EQ(TruncateUntrusted(std::string(100, '\x80'), 10), std::string(7, '\x80') + "\u2026(100 bytes)");
}

}  // namespace
}  // namespace cxds
