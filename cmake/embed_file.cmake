# Writes OUTPUT, a C++ source defining `std::string_view FUNCTION()` in namespace cxds that
# returns the bytes of INPUT: how static assets (the admin status page) are compiled into the
# binary without a build step outside CMake. Run with
#   cmake -DINPUT=... -DOUTPUT=... -DFUNCTION=... -P embed_file.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
# One line of initializer per line of the input, after its newline byte.
string(REPLACE "'\\x0a'," "'\\x0a',\n" bytes "${bytes}")
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${input_name} by cmake/embed_file.cmake; do not edit.\n"
  "#include <string_view>\n\n"
  "namespace cxds {\n"
  "namespace {\n"
  "constexpr char kBytes[${byte_count} + 1] = {\n${bytes}'\\0'};\n"
  "}  // namespace\n\n"
  "std::string_view ${FUNCTION}() { return std::string_view(kBytes, ${byte_count}); }\n\n"
  "}  // namespace cxds\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
